/**
 * The HTTP API's plain responses and the query parameters every pod path
 * reads: JSON bodies, `Status` failures (429 with `Retry-After`, 401 with
 * its challenge), the serving core's refusals as the API server words them,
 * and `Table`, boolean and `includeObject` parameters as Go reads them.
 *
 * @module
 */

import { textResponse } from "../http1/mod.ts";
import type { JsonObject } from "../model/json.ts";
import type { Refusal } from "../serving/mod.ts";
import { type IncludeObject, type StatusCodeHttp, statusObject } from "./api_objects.ts";

/** The encoder of response bodies. */
export const ENCODER = new TextEncoder();
/** The content type of every JSON response. */
export const JSON_TYPE = "application/json";
/** Seconds a client refused for load is told to wait (`Retry-After`), as the API server says. */
const RETRY_AFTER_SECONDS = 1;

/** A JSON response (a string is sent as it is, an array of strings one after another). */
export function json(
  body: string | readonly string[] | JsonObject,
  status = 200,
  headers: HeadersInit = {},
): Response {
  const text = typeof body === "string" || Array.isArray(body)
    ? body as string | readonly string[]
    : JSON.stringify(body);
  return textResponse(text, {
    status,
    headers: { "content-type": JSON_TYPE, ...headers },
  });
}

/** A `Status` failure, with `Retry-After` on 429 and the bearer challenge on 401. */
export function failure(
  code: StatusCodeHttp,
  message: string,
  details?: { name: string; kind: string },
): Response {
  if (code === 429) {
    return json(
      statusObject(code, message, { retryAfterSeconds: RETRY_AFTER_SECONDS }),
      code,
      { "retry-after": String(RETRY_AFTER_SECONDS) },
    );
  }
  const headers: HeadersInit = code === 401
    ? { "www-authenticate": 'Bearer realm="pods-api"' }
    : {};
  return json(statusObject(code, message, details), code, headers);
}

/** The serving core's refusal as the API server words it: 429 for load, 503 while not serving. */
export function refused(refusal: Refusal): Response {
  switch (refusal.reason) {
    case "rate_limited":
    case "too_many_watchers":
      return failure(429, refusal.message);
    case "not_synced":
    case "shutting_down":
      return failure(503, refusal.message);
  }
}

/** Which `Table` version the client asked for, if any. */
export function tableVersion(accept: string | null): "v1" | "v1beta1" | undefined {
  if (accept === null) return undefined;
  for (const part of accept.split(",")) {
    const params = new Map<string, string>();
    for (const p of part.split(";").slice(1)) {
      const [k, v] = p.split("=");
      if (k !== undefined && v !== undefined) params.set(k.trim(), v.trim());
    }
    if (params.get("as") === "Table" && params.get("g") === "meta.k8s.io") {
      const v = params.get("v");
      if (v === "v1" || v === "v1beta1") return v;
    }
  }
  return undefined;
}

/** A boolean query parameter as Go's `strconv.ParseBool` reads it (python sends `True`). */
export function parseBool(value: string | null): boolean {
  return value !== null && ["1", "t", "T", "true", "TRUE", "True"].includes(value);
}

/** `includeObject` of a `Table` request: `Metadata` unless `None` or `Object`. */
export function includeObject(value: string | null): IncludeObject {
  return value === "None" || value === "Object" ? value : "Metadata";
}
