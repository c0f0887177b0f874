2a
b2a
b
Bx