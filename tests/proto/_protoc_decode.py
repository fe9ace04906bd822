"""Independent decoder for tests: reads v1.Pod bytes on stdin with the
official protobuf runtime (descriptors compiled by protoc) and prints the
pod's Kubernetes JSON shape, or (with --reserialize) the canonical
deterministic re-serialization in hex. Usage:
  python3 _protoc_decode.py DESCRIPTOR_SET [--reserialize] < pod.bin
"""
import base64
import datetime
import json
import sys

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

META = "k8s.io.apimachinery.pkg.apis.meta.v1."
CORE = "k8s.io.api.core.v1."
# Embedded Go structs whose fields Kubernetes JSON puts in the parent.
INLINE = {
    (CORE + "Volume", "volumeSource"),
    (CORE + "Probe", "handler"),
    (CORE + "EphemeralContainer", "ephemeralContainerCommon"),
    (CORE + "ConfigMapVolumeSource", "localObjectReference"),
    (CORE + "ConfigMapProjection", "localObjectReference"),
    (CORE + "ConfigMapKeySelector", "localObjectReference"),
    (CORE + "ConfigMapEnvSource", "localObjectReference"),
    (CORE + "SecretProjection", "localObjectReference"),
    (CORE + "SecretKeySelector", "localObjectReference"),
    (CORE + "SecretEnvSource", "localObjectReference"),
}


def rfc3339(seconds, micros=None):
    t = datetime.datetime(1970, 1, 1) + datetime.timedelta(seconds=seconds)
    text = t.strftime("%Y-%m-%dT%H:%M:%S")
    return text + ("Z" if micros is None else ".%06dZ" % micros)


def value(msg):
    name = msg.DESCRIPTOR.full_name
    if name == META + "Time":
        return rfc3339(msg.seconds)
    if name == META + "MicroTime":
        return rfc3339(msg.seconds, msg.nanos // 1000)
    if name == "k8s.io.apimachinery.pkg.api.resource.Quantity":
        return msg.string
    if name == "k8s.io.apimachinery.pkg.util.intstr.IntOrString":
        return msg.strVal if msg.type == 1 else msg.intVal
    if name == META + "FieldsV1":
        return json.loads(msg.Raw.decode("utf-8"))
    return obj(msg)


def scalar_or_message(fd, v):
    if fd.type == fd.TYPE_MESSAGE:
        return value(v)
    if fd.type == fd.TYPE_BYTES:
        return base64.b64encode(v).decode("ascii")
    return v


def obj(msg, out=None):
    out = {} if out is None else out
    for fd, v in msg.ListFields():
        if (msg.DESCRIPTOR.full_name, fd.name) in INLINE:
            obj(v, out)
        elif fd.message_type is not None and fd.message_type.GetOptions().map_entry:
            vfd = fd.message_type.fields_by_name["value"]
            out[fd.name] = {k: scalar_or_message(vfd, x) for k, x in v.items()}
        elif fd.label == fd.LABEL_REPEATED:
            out[fd.name] = [scalar_or_message(fd, x) for x in v]
        else:
            out[fd.name] = scalar_or_message(fd, v)
    return out


def main():
    fds = descriptor_pb2.FileDescriptorSet()
    with open(sys.argv[1], "rb") as f:
        fds.ParseFromString(f.read())
    pool = descriptor_pool.DescriptorPool()
    for file in fds.file:
        pool.Add(file)
    desc = pool.FindMessageTypeByName(CORE + "Pod")
    factory = message_factory.MessageFactory(pool)
    cls = factory.GetPrototype(desc) if hasattr(factory, "GetPrototype") else message_factory.GetMessageClass(desc)
    pod = cls()
    pod.ParseFromString(sys.stdin.buffer.read())
    if "--reserialize" in sys.argv:
        sys.stdout.write(pod.SerializeToString(deterministic=True).hex())
    else:
        json.dump(obj(pod), sys.stdout)


main()
