"""Array producers the tests hand lowbit, besides numpy's own arrays."""


class OnlyDlpack:
    """An array with __dlpack__ and no buffer protocol (as JAX's and
    CuPy's arrays are to lowbit)."""

    def __init__(self, array):
        self.array, self.shape = array, array.shape

    def __dlpack__(self, **kwargs):
        return self.array.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self.array.__dlpack_device__()
