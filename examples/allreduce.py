import array, hvdc
hvdc.init()
x = array.array("f", [hvdc.rank() + 1.0] * 4)
y = hvdc.allreduce(x, op=hvdc.Sum)
print(f"rank {hvdc.rank()} of {hvdc.size()}: {y.tolist()}")
