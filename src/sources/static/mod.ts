/**
 * The static pod source: a directory of pod manifests, as the kubelet's
 * `--pod-manifest-path`.
 *
 * @module
 */

export {
  DEFAULT_MAX_MANIFEST_BYTES,
  DEFAULT_RESCAN_MS,
  denoFsReader,
  type FsEntry,
  type FsReader,
  type FsStat,
  type ManifestRejectReason,
  staticPodName,
  StaticPodSource,
  type StaticPodSourceOptions,
} from "./static_source.ts";
