"""A linear-chain conditional random field for sequence tagging: emission
scores from a linear layer, a transition matrix with start and end scores,
the log partition function by the forward recursion in log space
(``np.logaddexp.reduce``), and the gold path's score summed with ``zip`` over
consecutive tags; the class is built by a ``classmethod`` from a parameter
dict and the loss averages over sentences of different lengths, with ``**kwargs``
forwarded to the scorer."""
import numpy as np
import jax.numpy as jnp
import jax.scipy.special as jsp


class LinearChainCRF:
    def __init__(self, W, transitions, start, end):
        self.W = W
        self.transitions = transitions
        self.start = start
        self.end = end

    @classmethod
    def from_params(cls, params):
        return cls(params["W"], params["transitions"], params["start"], params["end"])

    def emissions(self, tokens, scale=1.0):
        return scale * (tokens @ self.W)

    def log_partition(self, emissions):
        alpha = self.start + emissions[0]
        for e in emissions[1:]:
            alpha = np.logaddexp.reduce(alpha[:, None] + self.transitions, axis=0) + e
        return np.logaddexp.reduce(alpha + self.end)

    def path_score(self, emissions, tags):
        score = self.start[tags[0]] + self.end[tags[-1]]
        score = score + sum(emissions[i, t] for i, t in enumerate(tags))
        score = score + sum(self.transitions[a, b] for a, b in zip(tags[:-1], tags[1:]))
        return score

    def neg_log_likelihood(self, tokens, tags, **scorer_options):
        em = self.emissions(tokens, **scorer_options)
        return self.log_partition(em) - self.path_score(em, tags)


def crf_loss(params, sentences):
    crf = LinearChainCRF.from_params(params)
    losses = [crf.neg_log_likelihood(tokens, tags, scale=0.5) for tokens, tags in sentences]
    return sum(losses) / len(losses)


def make_inputs(rng):
    n_tags, dim = 3, 4
    params = {"W": rng.standard_normal((dim, n_tags)), "transitions": rng.standard_normal((n_tags, n_tags)),
              "start": 0.1 * rng.standard_normal(n_tags), "end": 0.1 * rng.standard_normal(n_tags)}
    sentences = [(rng.standard_normal((n, dim)), [int(t) for t in rng.integers(0, n_tags, size=n)])
                 for n in (4, 6, 3)]
    return params, sentences


fun = crf_loss
argnums = (0,)


def jax_fun(params, sentences):
    total = 0.0
    for tokens, tags in sentences:
        em = 0.5 * (tokens @ params["W"])
        alpha = params["start"] + em[0]
        for e in em[1:]:
            alpha = jsp.logsumexp(alpha[:, None] + params["transitions"], axis=0) + e
        log_z = jsp.logsumexp(alpha + params["end"])
        score = params["start"][tags[0]] + params["end"][tags[-1]]
        score = score + sum(em[i, t] for i, t in enumerate(tags))
        score = score + sum(params["transitions"][a, b] for a, b in zip(tags[:-1], tags[1:]))
        total = total + log_z - score
    return total / len(sentences)
