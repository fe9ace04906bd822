/**
 * The body of `PodQuery/ListDevices`: the node's devices (podresources
 * `GetAllocatableResources`, and devices in use) with the pods and
 * containers holding each, or free, read from the query side's
 * {@linkcode DevicesView}.
 *
 * @module
 */

import {
  decodeListDevicesRequest,
  encodeListDevicesResponse,
  type ListDevicesResponseMessage,
} from "../proto/mod.ts";
import { decodeRequest } from "./errors.ts";

/** What ListDevices reads (the pipeline's `NodeDevices`). */
export interface DevicesView {
  view(resourceName: string): Omit<ListDevicesResponseMessage, "message" | "resumeToken"> & {
    readonly reason: string;
  };
}

/**
 * Answers one ListDevices request.
 *
 * @param request The encoded `ListDevicesRequest`.
 * @param devices The node's devices; absent when the daemon has no podresources source.
 * @param resumeToken The position the answer holds at.
 * @returns The encoded `ListDevicesResponse`.
 * @throws {RpcError} INVALID_ARGUMENT for a request that does not decode.
 */
export function listDevices(
  request: Uint8Array,
  devices: DevicesView | undefined,
  resumeToken: string,
): Uint8Array {
  const { resourceName } = decodeRequest("ListDevices", () => decodeListDevicesRequest(request));
  if (devices === undefined) {
    return encodeListDevicesResponse({
      available: false,
      message: "the daemon reads no podresources API (--pod-resources-endpoint none)",
      devices: [],
      cpuIds: [],
      freeCpuIds: [],
      memory: [],
      resumeToken,
    });
  }
  const view = devices.view(resourceName);
  return encodeListDevicesResponse({ ...view, message: view.reason, resumeToken });
}
