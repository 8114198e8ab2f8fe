"""Tasks that the worker-pool tests run inside workers."""

from __future__ import annotations

import os
import time

import numpy as np


def ping() -> dict:
    return {"pid": os.getpid()}


def sleep(seconds: float) -> dict:
    time.sleep(seconds)
    return {"slept": seconds}


def burn(seconds: float) -> dict:
    end = time.process_time() + seconds
    n = 0
    while time.process_time() < end:
        n += 1
    return {"n": n}


def allocate(nbytes: int) -> dict:
    a = np.ones(nbytes, np.uint8)
    return {"first": int(a[0])}


def crash() -> dict:
    os.abort()
