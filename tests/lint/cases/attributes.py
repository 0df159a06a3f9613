# checks: JXM101, JXM104
# Attribute paths as reference keys; `_step` donates its first argument.
import jax


class Trainer:
    def __init__(self, state):
        self.state = state
        self.other = state
        self._step = jax.jit(self.step, donate_argnums=0)

    def step(self, state):
        return state + 1

    def fit(self, n):
        for _ in range(n):
            self.state = self._step(self.state)

    def write_back_later(self):
        new = self._step(self.state)
        print("stepped")
        self.state = new

    def forgets_to_write_back(self):
        return self._step(self.state)  # JXM104

    def reads_after(self):
        new = self._step(self.state)
        print(self.state)  # JXM101
        self.state = new

    def method_call_may_read(self):
        new = self._step(self.state)
        self.log()  # JXM101
        self.state = new

    def unrelated_attribute_is_fine(self):
        new = self._step(self.state)
        print(self.other.shape, self.name)
        self.state = new

    def log(self):
        print(self.state)
