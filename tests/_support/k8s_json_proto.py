"""A Kubernetes object as its JSON reads (the API's JSON field names) put into
the protobuf message protoc's descriptors give for it, the way the API's
protobuf serializer carries it: meta/v1 Time and MicroTime as seconds and
nanos, a resource Quantity as its string, an IntOrString as its type and both
values, FieldsV1 as the raw JSON, and the Go structs the JSON inlines (a
probe's handler, a volume's source, an ephemeral container's common part) in
their own message field. Fields the message does not have are an
error, so nothing a test gives is silently left out.
"""
import datetime
import json

from google.protobuf.descriptor import FieldDescriptor

META = "k8s.io.apimachinery.pkg.apis.meta.v1."


def _time(msg, value, where):
    if not isinstance(value, str):
        raise TypeError(f"{where}: a time is an RFC 3339 string, not {value!r}")
    at = datetime.datetime.fromisoformat(value.replace("Z", "+00:00"))
    epoch = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)
    delta = at - epoch
    msg.seconds = delta.days * 86400 + delta.seconds
    if delta.microseconds:
        msg.nanos = delta.microseconds * 1000


def _quantity(msg, value, where):
    if not isinstance(value, (str, int)) or isinstance(value, bool):
        raise TypeError(f"{where}: a quantity is a string, not {value!r}")
    msg.string = str(value)


def _int_or_string(msg, value, where):
    # As the API's serializer writes it: every field, the unused value empty.
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise TypeError(f"{where}: an int or a string, not {value!r}")
    msg.type = 1 if isinstance(value, str) else 0
    msg.intVal = 0 if isinstance(value, str) else value
    msg.strVal = value if isinstance(value, str) else ""


def _fields(msg, value, where):
    msg.Raw = json.dumps(value, separators=(",", ":"), sort_keys=True).encode()


# Go structs embedded inline in the JSON: their fields sit in the outer
# object's JSON, and in one message field of the outer message.
INLINE = {
    "k8s.io.api.core.v1.Probe": "handler",
    "k8s.io.api.core.v1.Volume": "volumeSource",
    "k8s.io.api.core.v1.EphemeralContainer": "ephemeralContainerCommon",
}

SPECIAL = {
    META + "Time": _time,
    META + "MicroTime": _time,
    META + "FieldsV1": _fields,
    "k8s.io.apimachinery.pkg.api.resource.Quantity": _quantity,
    "k8s.io.apimachinery.pkg.util.intstr.IntOrString": _int_or_string,
}


def _scalar(fd, value, where):
    if fd.type == FieldDescriptor.TYPE_BOOL:
        ok = isinstance(value, bool)
    elif fd.type == FieldDescriptor.TYPE_STRING:
        ok = isinstance(value, str)
    elif fd.type == FieldDescriptor.TYPE_BYTES:
        ok = isinstance(value, str)
        value = value.encode() if ok else value
    elif fd.type in (FieldDescriptor.TYPE_DOUBLE, FieldDescriptor.TYPE_FLOAT):
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    else:
        ok = isinstance(value, int) and not isinstance(value, bool)
    if not ok:
        raise TypeError(f"{where}: {value!r} is not a {fd.name} of its type")
    return value


def fill(msg, value, where):
    """Sets `msg` from the JSON `value`; `where` names it in errors."""
    special = SPECIAL.get(msg.DESCRIPTOR.full_name)
    if special is not None:
        special(msg, value, where)
        return
    if not isinstance(value, dict):
        raise TypeError(f"{where}: {msg.DESCRIPTOR.name} is an object, not {value!r}")
    msg.SetInParent()
    inline = INLINE.get(msg.DESCRIPTOR.full_name)
    if inline is not None:
        embedded = msg.DESCRIPTOR.fields_by_name[inline].message_type.fields_by_name
        inner = {k: v for k, v in value.items() if k in embedded}
        value = {k: v for k, v in value.items() if k not in embedded}
        if inner:
            fill(getattr(msg, inline), inner, where)
    for key, item in value.items():
        fd = msg.DESCRIPTOR.fields_by_name.get(key)
        path = f"{where}.{key}"
        if fd is None:
            raise KeyError(f"{path}: {msg.DESCRIPTOR.full_name} has no field {key!r}")
        if item is None:
            continue
        target = getattr(msg, key)
        if fd.message_type is not None and fd.message_type.GetOptions().map_entry:
            value_fd = fd.message_type.fields_by_name["value"]
            for k, v in item.items():
                if value_fd.message_type is not None:
                    fill(target[k], v, f"{path}[{k}]")
                else:
                    target[k] = _scalar(value_fd, v, f"{path}[{k}]")
        elif fd.label == FieldDescriptor.LABEL_REPEATED:
            if not isinstance(item, list):
                raise TypeError(f"{path}: a list, not {item!r}")
            for i, element in enumerate(item):
                if fd.message_type is not None:
                    fill(target.add(), element, f"{path}[{i}]")
                else:
                    target.append(_scalar(fd, element, f"{path}[{i}]"))
        elif fd.message_type is not None:
            fill(target, item, path)
        else:
            setattr(msg, key, _scalar(fd, item, path))


def pod_message(pod_class, pod):
    """A v1.Pod message (of `pod_class`) holding the JSON pod `pod`."""
    msg = pod_class()
    fill(msg, pod, "pod")
    return msg
