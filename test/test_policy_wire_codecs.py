"""The two wire encodings (openpi msgpack, robotwin-tcp JSON), their framing and openpi's image letterboxing."""

from __future__ import annotations

import base64
import json
import socket

import msgpack
import numpy as np
import pytest
from PIL import Image

from robofollow_ros.errors import PolicyError
from robofollow_ros.policy import openpi_codec, robotwin_tcp_codec
from robofollow_ros.policy.openpi_images import from_openpi, resize_with_pad, to_openpi
from robofollow_ros.policy.openpi_messages import actions_from_reply, parse_request

VALUES = [
    np.arange(12, dtype=np.float32).reshape(3, 4),
    np.arange(2 * 3 * 3, dtype=np.uint8).reshape(2, 3, 3),
    np.array([True, False]),
    np.array(1.5),
    np.arange(6, dtype='>i4').reshape(2, 3),
    np.arange(6, dtype=np.float64).reshape(2, 3).T,
]


@pytest.mark.parametrize('array', VALUES, ids=lambda a: f'{a.dtype.str}{list(a.shape)}')
def test_openpi_arrays_are_the_tagged_maps_openpi_clients_write(array):
    frame = openpi_codec.packb({'a': array})
    tagged = {b'__ndarray__': True, b'data': array.tobytes(), b'dtype': array.dtype.str, b'shape': array.shape}
    assert frame == msgpack.packb({'a': tagged})
    decoded = openpi_codec.unpackb(frame)['a']
    assert decoded.dtype == array.dtype and decoded.shape == array.shape
    np.testing.assert_array_equal(decoded, array)


def test_openpi_scalars_strings_and_nesting_round_trip():
    value = {'x': np.float32(2.5), 'n': np.int64(-3), 'ok': np.bool_(True), 'prompt': 'pick', 'list': [1, 2.0]}
    frame = openpi_codec.packb(value)
    assert msgpack.unpackb(frame)['x'] == {b'__npgeneric__': True, b'data': 2.5, b'dtype': '<f4'}
    decoded = openpi_codec.unpackb(frame)
    assert decoded == value
    assert isinstance(decoded['x'], np.float32) and isinstance(decoded['n'], np.int64)


@pytest.mark.parametrize('bad', [np.zeros(2, dtype=complex), np.array([object()], dtype=object)])
def test_openpi_refuses_object_and_complex_arrays_when_encoding(bad):
    with pytest.raises(PolicyError, match='cannot'):
        openpi_codec.packb(bad)


@pytest.mark.parametrize(
    ('tagged', 'message'),
    [
        ({b'__ndarray__': True, b'data': b'\0' * 8, b'dtype': '|O', b'shape': [1]}, 'cannot travel'),
        ({b'__ndarray__': True, b'data': b'\0' * 4, b'dtype': '<f4', b'shape': [3]}, 'malformed array'),
        ({b'__ndarray__': True, b'data': b'\0' * 4, b'dtype': 'nonsense', b'shape': [1]}, 'malformed array'),
        ({b'__ndarray__': True, b'dtype': '<f4', b'shape': [1]}, 'malformed array'),
        ({b'__npgeneric__': True, b'data': 1, b'dtype': '<c8'}, 'cannot travel'),
    ],
)
def test_openpi_refuses_malformed_or_unsafe_arrays_when_decoding(tagged, message):
    with pytest.raises(PolicyError, match=message):
        openpi_codec.unpackb(msgpack.packb({'a': tagged}))


def test_openpi_garbage_is_a_policy_error():
    with pytest.raises(PolicyError, match='not an openpi msgpack frame'):
        openpi_codec.unpackb(b'\xc1\xc1\xc1')


def test_openpi_actions_are_validated():
    assert actions_from_reply({'actions': np.zeros((50, 14)), 'server_timing': {}}).dtype == np.float32
    with pytest.raises(PolicyError, match='no "actions"'):
        actions_from_reply({'action': np.zeros((50, 14))})
    with pytest.raises(PolicyError, match='shape'):
        actions_from_reply({'actions': np.zeros((50, 32))})
    with pytest.raises(PolicyError, match='non-finite'):
        actions_from_reply({'actions': np.full((2, 14), np.nan)})


def request(**changes):
    base = {
        'images': {name: np.zeros((3, 224, 224), np.uint8) for name in ('cam_high', 'cam_left_wrist')},
        'state': np.zeros(14, np.float32),
        'prompt': 'x',
    }
    return {**base, **changes}


@pytest.mark.parametrize(
    ('bad', 'message'),
    [
        (request(extra=1), 'unknown keys'),
        (request(images={'cam_left_wrist': np.zeros((3, 8, 8), np.uint8)}), 'cam_high'),
        (request(images={'cam_high': np.zeros((3, 8, 8), np.uint8), 'cam_low2': 1}), 'unknown camera'),
        (request(state=np.zeros(13)), 'state'),
        (request(state='abc'), 'state'),
        (request(prompt=3), 'prompt'),
        ([1, 2], 'must be a map'),
    ],
)
def test_openpi_requests_are_checked(bad, message):
    with pytest.raises(PolicyError, match=message):
        parse_request(bad)


def test_openpi_request_images_come_back_channels_last():
    parsed = parse_request(request())
    assert parsed.images['cam_high'].shape == (224, 224, 3) and 'cam_right_wrist' not in parsed.images


def gradient(height, width):
    y, x = np.mgrid[0:height, 0:width]
    return np.stack([x * 255 // width, y * 255 // height, (x + y) % 256], axis=-1).astype(np.uint8)


def test_letterboxing_keeps_openpi_geometry_for_the_protocol_cameras():
    image = gradient(240, 320)
    padded = resize_with_pad(image, 224, 224)
    assert padded.shape == (224, 224, 3)
    assert not padded[:28].any() and not padded[196:].any()
    assert padded[28:196].any(axis=(1, 2)).all()
    chw = to_openpi(image)
    assert chw.shape == (3, 224, 224) and chw.dtype == np.uint8
    np.testing.assert_array_equal(from_openpi(chw), padded)


@pytest.mark.parametrize(('height', 'width'), [(240, 320), (480, 640), (100, 80), (224, 300)])
def test_letterboxing_matches_a_pil_resize_with_pad(height, width):
    image = gradient(height, width)
    ratio = max(width / 224, height / 224)
    size = (int(width / ratio), int(height / ratio))
    reference = np.zeros((224, 224, 3), np.uint8)
    top, left = int((224 - size[1]) / 2), int((224 - size[0]) / 2)
    reference[top : top + size[1], left : left + size[0]] = np.asarray(
        Image.fromarray(image).resize(size, resample=Image.BILINEAR)
    )
    ours = resize_with_pad(image, 224, 224)
    assert ((ours > 0).any(axis=2) == (reference > 0).any(axis=2)).mean() > 0.99
    assert np.abs(ours.astype(int) - reference.astype(int)).mean() < 3.0


def test_float_images_are_clipped_to_uint8():
    image = np.full((224, 224, 3), 2.0, dtype=np.float32)
    image[0, 0] = -1.0
    converted = to_openpi(image)
    assert converted.dtype == np.uint8 and converted[:, 0, 0].tolist() == [0, 0, 0] and converted.max() == 255


def test_robotwin_arrays_travel_as_base64_json():
    array = np.arange(6, dtype=np.float32).reshape(2, 3)
    frame = robotwin_tcp_codec.encode_message({'res': array, 'n': np.int32(4), 'ok': np.bool_(True)})
    (size,) = robotwin_tcp_codec.HEADER.unpack(frame[:4])
    assert size == len(frame) - 4
    document = json.loads(frame[4:])
    assert document['res'] == {
        '__numpy_array__': True,
        'data': base64.b64encode(array.tobytes()).decode(),
        'dtype': 'float32',
        'shape': [2, 3],
    }
    assert document['n'] == 4 and document['ok'] is True
    decoded = robotwin_tcp_codec.decode_message(frame[4:])
    assert decoded['res'].dtype == np.float32
    np.testing.assert_array_equal(decoded['res'], array)


@pytest.mark.parametrize(
    ('body', 'message'),
    [
        (b'not json', 'not a UTF-8 JSON'),
        (b'\xff\xfe', 'not a UTF-8 JSON'),
        (b'{"__numpy_array__": true, "data": "AAAA", "dtype": "float32", "shape": [5]}', 'malformed array'),
        (b'{"__numpy_array__": true, "data": "!!", "dtype": "float32", "shape": [1]}', 'malformed array'),
        (b'{"__numpy_array__": true, "data": "", "dtype": "object", "shape": [0]}', 'cannot travel'),
    ],
)
def test_robotwin_malformed_bodies_are_policy_errors(body, message):
    with pytest.raises(PolicyError, match=message):
        robotwin_tcp_codec.decode_message(body)


def test_robotwin_refuses_nan_when_encoding():
    with pytest.raises(PolicyError, match='cannot encode'):
        robotwin_tcp_codec.encode_message({'res': float('nan')})


def test_robotwin_frames_are_read_whole_and_lengths_are_capped():
    left, right = socket.socketpair()
    with left, right:
        left.sendall(robotwin_tcp_codec.encode_message({'cmd': 'reset', 'obs': None}))
        assert json.loads(robotwin_tcp_codec.read_frame(right)) == {'cmd': 'reset', 'obs': None}
        left.sendall(robotwin_tcp_codec.HEADER.pack(1000))
        with pytest.raises(PolicyError, match='outside'):
            robotwin_tcp_codec.read_frame(right, max_bytes=999)
        left.sendall(robotwin_tcp_codec.HEADER.pack(0))
        with pytest.raises(PolicyError, match='outside'):
            robotwin_tcp_codec.read_frame(right)
        left.sendall(robotwin_tcp_codec.HEADER.pack(10) + b'12345')
        left.shutdown(socket.SHUT_WR)
        with pytest.raises(PolicyError, match='closed after 9 of 14'):
            robotwin_tcp_codec.read_frame(right)
        assert robotwin_tcp_codec.read_frame(right) is None
