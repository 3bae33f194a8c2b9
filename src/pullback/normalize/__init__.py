"""Normal form: every statement one operation on atoms, and the expressions that build it."""
