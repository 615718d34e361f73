"""The functions users call: trace, grad and value_and_grad, JAX's transforms, composed functions, gradcheck."""
