// the toy template
