"""Inverse kinematics and statics of a planar two-link arm lifted into 3-D
the way a robotics notebook writes it: joint positions by cumulative angle
sums (``np.cumsum``), link vectors stacked with a zero z-column, gravity
torques as ``np.cross`` of lever arms with forces (``np.broadcast_to`` one
force over the links), the end effector's reach error with ``np.hypot`` and
its heading error with ``np.arctan2``, and ``np.expand_dims`` for a
per-link mass. Differentiated with respect to the joint angles, the link
lengths and the masses."""
import numpy as np
import jax.numpy as jnp

GRAVITY = np.array([0.0, -9.81, 0.0])


def joint_positions(angles, lengths):
    phi = np.cumsum(angles)
    links = np.stack([lengths * np.cos(phi), lengths * np.sin(phi), np.zeros_like(phi)], axis=1)
    return np.cumsum(links, axis=0), links


def arm_objective(angles, lengths, masses, target):
    joints, links = joint_positions(angles, lengths)
    centres = joints - 0.5 * links
    forces = np.expand_dims(masses, 1) * np.broadcast_to(GRAVITY, (len(masses), 3))
    torque = np.sum(np.cross(centres, forces), axis=0)
    tip = joints[-1]
    reach = np.hypot(tip[0] - target[0], tip[1] - target[1])
    heading = np.arctan2(tip[1], tip[0]) - np.arctan2(target[1], target[0])
    return reach ** 2 + 0.1 * heading ** 2 + 1e-3 * np.sum(torque ** 2)


def make_inputs(rng):
    return (np.array([0.4, 0.7]) + 0.1 * rng.standard_normal(2), np.array([1.0, 0.8]),
            np.array([2.0, 1.2]), np.array([0.9, 1.1]))


fun = arm_objective
argnums = (0, 1, 2)


def jax_fun(angles, lengths, masses, target):
    phi = jnp.cumsum(angles)
    links = jnp.stack([lengths * jnp.cos(phi), lengths * jnp.sin(phi), jnp.zeros_like(phi)], axis=1)
    joints = jnp.cumsum(links, axis=0)
    centres = joints - 0.5 * links
    forces = masses[:, None] * jnp.broadcast_to(jnp.asarray(GRAVITY), (len(masses), 3))
    torque = jnp.sum(jnp.cross(centres, forces), axis=0)
    tip = joints[-1]
    reach = jnp.hypot(tip[0] - target[0], tip[1] - target[1])
    heading = jnp.arctan2(tip[1], tip[0]) - jnp.arctan2(target[1], target[0])
    return reach ** 2 + 0.1 * heading ** 2 + 1e-3 * jnp.sum(torque ** 2)
