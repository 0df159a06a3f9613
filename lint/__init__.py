"""Static donation analysis: libcst only, never imports or runs the code it reads."""
