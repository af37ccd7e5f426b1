import torch

def f(x):
    return (x +

def g(y: "é") -> int:
    return 1
