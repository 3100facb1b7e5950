# The AD article's hand-made XOR network: relu hidden layer of 2, linear output, no training.
declare input x [2]
declare exp_output y
declare weight W1 [2, 2]
declare weight b1 [2]
declare weight W2 [2]
declare intvar a1
declare intvar z1
declare intvar h
declare output o
declare intvar diff
declare loss lambda

define a1 = matmul x W1
define z1 = add a1 b1
define h = relu z1
define o = matmul h W2
define diff = sub o y
define lambda = pow diff 2
