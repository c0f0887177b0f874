2a
b2a
c2a

bBx