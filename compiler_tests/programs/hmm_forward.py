"""The log-likelihood of a Gaussian hidden Markov model by the forward
algorithm in log space: a class with ``@staticmethod`` helpers
(``log_softmax``, ``log_normal``), transition and initial distributions
parameterised by unnormalised logits, the recursion written with a list of
alphas appended per time step and an early return for an empty sequence, and
a batch of sequences summed with ``zip``."""
import numpy as np
from scipy.special import logsumexp
import jax.numpy as jnp
import jax.scipy.special as jsp


class GaussianHMM:
    def __init__(self, init_logits, trans_logits, means, log_scales):
        self.log_pi = self.log_softmax(init_logits)
        self.log_A = self.log_softmax(trans_logits, axis=1)
        self.means = means
        self.log_scales = log_scales

    @staticmethod
    def log_softmax(z, axis=-1):
        return z - logsumexp(z, axis=axis, keepdims=True)

    @staticmethod
    def log_normal(x, mean, log_scale):
        return -0.5 * ((x - mean) * np.exp(-log_scale)) ** 2 - log_scale - 0.5 * np.log(2 * np.pi)

    def emissions(self, obs):
        return self.log_normal(obs[:, None], self.means[None, :], self.log_scales[None, :])

    def log_likelihood(self, obs):
        if len(obs) == 0:
            return 0.0
        log_b = self.emissions(obs)
        alphas = [self.log_pi + log_b[0]]
        for t in range(1, len(obs)):
            prev = alphas[-1]
            alphas.append(logsumexp(prev[:, None] + self.log_A, axis=0) + log_b[t])
        return logsumexp(alphas[-1])


def hmm_nll(params, sequences, weights):
    model = GaussianHMM(**params)
    total = 0.0
    for obs, w in zip(sequences, weights):
        total = total - w * model.log_likelihood(obs)
    return total / sum(weights)


def make_inputs(rng):
    params = {"init_logits": rng.standard_normal(3), "trans_logits": rng.standard_normal((3, 3)),
              "means": np.array([-1.0, 0.0, 1.5]) + 0.1 * rng.standard_normal(3),
              "log_scales": 0.2 * rng.standard_normal(3)}
    sequences = [rng.standard_normal(6), rng.standard_normal(4), np.zeros(0)]
    return params, sequences, [1.0, 0.5, 2.0]


fun = hmm_nll
argnums = (0, 1)


def jax_fun(params, sequences, weights):
    log_pi = params["init_logits"] - jsp.logsumexp(params["init_logits"])
    log_A = params["trans_logits"] - jsp.logsumexp(params["trans_logits"], axis=1, keepdims=True)
    total = 0.0
    for obs, w in zip(sequences, weights):
        if len(obs) == 0:
            continue
        log_b = (-0.5 * ((obs[:, None] - params["means"]) * jnp.exp(-params["log_scales"])) ** 2
                 - params["log_scales"] - 0.5 * jnp.log(2 * jnp.pi))
        alpha = log_pi + log_b[0]
        for t in range(1, len(obs)):
            alpha = jsp.logsumexp(alpha[:, None] + log_A, axis=0) + log_b[t]
        total = total - w * jsp.logsumexp(alpha)
    return total / sum(weights)
