# Linear regression: o = a*x + b, fitted by squared error.
declare input x
declare exp_output y
declare weight a
declare weight b
declare intvar ax
declare output o
declare intvar diff
declare loss lambda

define ax = mul a x
define o = add ax b
define diff = sub o y
define lambda = pow diff 2
