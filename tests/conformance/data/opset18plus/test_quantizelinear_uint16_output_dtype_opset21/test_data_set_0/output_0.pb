By0JN¨a·i&OÀšêkGA$N
Ÿc“