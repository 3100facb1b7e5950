# 8x8 handwritten digits: 64 pixels -> 32 tanh hidden units -> 10 class scores -> softmax.
declare input x [64]
declare exp_output y [10]
declare weight W1 [64, 32]
declare weight b1 [32]
declare weight W2 [32, 10]
declare weight b2 [10]
declare intvar a1
declare intvar z1
declare intvar h
declare intvar a2
declare output logits
declare intvar logp
declare intvar ylogp
declare intvar total
declare loss lambda

# hidden layer: h = tanh(x W1 + b1)
define a1 = matmul x W1
define z1 = add a1 b1
define h = tanh z1
# class scores (the largest one is the predicted digit)
define a2 = matmul h W2
define logits = add a2 b2
# cross-entropy: minus the log-probability the network gives the right digit
define logp = logsoftmax logits
define ylogp = mul y logp
define total = sum ylogp
define lambda = neg total
