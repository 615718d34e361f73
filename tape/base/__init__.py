"""The ground floor: numbers from outside checked once, pytrees, gc pacing, where kernels/ comes from."""
