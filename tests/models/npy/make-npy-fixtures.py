#!/usr/bin/python3
# SPDX-License-Identifier: MIT
# Writes the small .npy files that npy_test.c reads, with NumPy itself as the
# independent reference for the format. Run from anywhere:
#   /usr/bin/python3 tests/models/npy/make-npy-fixtures.py
# The outputs are checked in next to this script (a few KB). Values follow one
# formula the C test recomputes: element k (row-major) of a numeric fixture is
# (k * 7) % 11 - 3 (cast to the dtype; unsigned and bool fixtures use % 2 for
# bool and (k * 7) % 11 for unsigned).
import os
import numpy as np

here = os.path.dirname(os.path.abspath(__file__))


def values(n, dt):
    k = np.arange(n)
    if dt == np.bool_:
        return (k % 2).astype(dt)
    if np.dtype(dt).kind == 'u':
        return ((k * 7) % 11).astype(dt)
    return ((k * 7) % 11 - 3).astype(dt)


def save(name, arr, version=None):
    path = os.path.join(here, name)
    with open(path, 'wb') as f:
        if version is None:
            np.save(f, arr, allow_pickle=True)
        else:
            np.lib.format.write_array(f, arr, version=version, allow_pickle=True)


types = ['f2', 'f4', 'f8', 'i1', 'i2', 'i4', 'i8', 'u1', 'u2', 'u4', 'u8', 'b1']
for t in types:
    dt = np.bool_ if t == 'b1' else np.dtype('<' + t)
    save('ok-%s-2x3.npy' % t, values(6, dt).reshape(2, 3))

f4 = np.dtype('<f4')
save('ok-v2-f4-2x3.npy', values(6, f4).reshape(2, 3), version=(2, 0))
save('ok-v3-f4-2x3.npy', values(6, f4).reshape(2, 3), version=(3, 0))
save('ok-scalar-i8.npy', np.array(values(1, np.dtype('<i8'))[0]))
save('ok-1d-f4-5.npy', values(5, f4))
save('ok-empty-f4-0x3.npy', np.zeros((0, 3), f4))
save('ok-8d-u1.npy', values(256, np.uint8).reshape(2, 2, 2, 2, 2, 2, 2, 2))

save('bad-fortran.npy', np.asfortranarray(values(6, f4).reshape(2, 3)))
save('bad-bigendian.npy', values(6, np.dtype('>f4')).reshape(2, 3))
save('bad-object.npy', np.array([1, 'a'], dtype=object))
save('bad-structured.npy', np.zeros(2, dtype=[('a', '<f4'), ('b', '<i4')]))
save('bad-unicode.npy', np.array(['ab', 'c']))
save('bad-complex.npy', np.zeros(2, np.complex64))
save('bad-9d.npy', np.zeros((1,) * 9, f4))
