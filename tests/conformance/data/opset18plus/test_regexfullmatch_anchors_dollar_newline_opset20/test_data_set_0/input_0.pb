2abc2abc
2
abcBx