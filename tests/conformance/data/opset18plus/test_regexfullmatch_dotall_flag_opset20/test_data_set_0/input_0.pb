2a
c2abcBx