BxJ0óW¬Ba¿FBÎ€XBL"B
žÄB€8ï@‘]B¥°B	 BÃÚ¢BÈq‚B ˜–B