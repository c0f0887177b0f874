
By0Josâ	.ksA