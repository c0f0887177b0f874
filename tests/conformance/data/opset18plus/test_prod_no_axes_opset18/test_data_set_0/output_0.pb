By0J
‰A¿