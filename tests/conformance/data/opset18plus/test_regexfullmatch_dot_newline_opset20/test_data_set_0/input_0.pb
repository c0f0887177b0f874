2abc2a
c2aéc2ac2acBx