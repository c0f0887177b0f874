BxJReÜR´úoY{t±˜½/o
E