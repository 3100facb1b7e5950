# XOR with a two-layer network: 2 inputs -> 4 tanh hidden units -> 1 logistic output.
declare input x [2]
declare exp_output y
declare weight W1 [2, 4]
declare weight b1 [4]
declare weight W2 [4]
declare weight b2
declare intvar a1
declare intvar z1
declare intvar h
declare intvar a2
declare intvar z2
declare output o
declare intvar diff
declare loss lambda

# hidden layer: h = tanh(x W1 + b1), a vector of 4
define a1 = matmul x W1
define z1 = add a1 b1
define h = tanh z1
# output layer: o = logistic(h . W2 + b2), one number in (0, 1)
define a2 = matmul h W2
define z2 = add a2 b2
define o = logistic z2
# squared error
define diff = sub o y
define lambda = pow diff 2
