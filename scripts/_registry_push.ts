/**
 * Pushes a built image to a registry over the OCI distribution API (private
 * to `scripts/image.ts`): each blob unless the registry has it (HEAD), in one
 * monolithic upload (POST, then PUT with the digest), then the manifest under
 * the tag. Anonymous, Basic, or Bearer tokens from the registry's token
 * service (with the Basic credentials, when given) as `WWW-Authenticate` asks.
 *
 * @module
 */

/** One blob to push. */
export interface PushBlob {
  readonly digest: string;
  readonly data: Uint8Array;
}

/** Options of {@linkcode pushImage}. */
export interface PushOptions {
  /** Config and layers. */
  blobs: readonly PushBlob[];
  /** The image manifest (OCI), or the image index of a multi-platform image; pushed under the tag. */
  manifest: Uint8Array;
  /** Its media type. @default {"application/vnd.oci.image.manifest.v1+json"} */
  manifestType?: string;
  /** The platforms' manifests an index names, pushed by digest first. */
  platformManifests?: readonly PushBlob[];
  /** Use http:// (always for localhost and 127.0.0.1). */
  plainHttp?: boolean;
  username?: string | undefined;
  password?: string | undefined;
  /** The fetch to use (tests). @default {globalThis.fetch} */
  fetch?: typeof fetch;
}

/** What was pushed. */
export interface PushResult {
  readonly reference: string;
  /** The manifest's digest as the registry reported it. */
  readonly digest: string;
  /** Blobs uploaded (the others were there already). */
  readonly uploaded: number;
}

/**
 * Splits `host[:port]/repository[:tag]` (tag default `latest`).
 *
 * @param reference The image reference.
 * @returns Registry host, repository and tag.
 * @throws {TypeError} When there is no registry host.
 */
export function parseReference(
  reference: string,
): { host: string; repository: string; tag: string } {
  const slash = reference.indexOf("/");
  const host = reference.slice(0, slash);
  if (slash === -1 || !/[.:]|^localhost$/.test(host)) {
    throw new TypeError(
      `Cannot push to "${reference}": name the registry, e.g. registry.example.com/pods-api:0.1.0`,
    );
  }
  const rest = reference.slice(slash + 1);
  const colon = rest.lastIndexOf(":");
  return colon === -1
    ? { host, repository: rest, tag: "latest" }
    : { host, repository: rest.slice(0, colon), tag: rest.slice(colon + 1) };
}

function challenge(header: string | null): Record<string, string> & { scheme?: string } {
  if (header === null) return {};
  const scheme = /^(\w+)/.exec(header)?.[1]?.toLowerCase();
  const params: Record<string, string> = {};
  for (const m of header.matchAll(/(\w+)="([^"]*)"/g)) params[m[1]!] = m[2]!;
  return { ...params, ...(scheme ? { scheme } : {}) };
}

/**
 * Pushes an image's blobs and manifest.
 *
 * @param reference Where to: `host[:port]/repository:tag`.
 * @param options Blobs, manifest, transport and credentials.
 * @returns The reference and the manifest digest.
 * @throws {Error} When the registry cannot be reached or refuses a request.
 */
export async function pushImage(reference: string, options: PushOptions): Promise<PushResult> {
  const { host, repository, tag } = parseReference(reference);
  const doFetch = options.fetch ?? fetch;
  const local = /^(localhost|127\.0\.0\.1|\[::1\])(:\d+)?$/.test(host);
  const base = `${options.plainHttp || local ? "http" : "https"}://${host}`;
  const basic = options.username !== undefined
    ? `Basic ${btoa(`${options.username}:${options.password ?? ""}`)}`
    : undefined;
  let authorization: string | undefined;

  async function call(method: string, url: string, init: RequestInit = {}): Promise<Response> {
    for (let attempt = 0;; attempt++) {
      const headers = new Headers(init.headers);
      if (authorization) headers.set("authorization", authorization);
      let response: Response;
      try {
        response = await doFetch(new URL(url, base), { ...init, method, headers });
      } catch (err) {
        throw new Error(`Registry ${host} is unreachable: ${(err as Error).message}`);
      }
      if (response.status !== 401 || attempt > 0) return response;
      await response.body?.cancel();
      const c = challenge(response.headers.get("www-authenticate"));
      if (c.scheme === "basic" && basic) {
        authorization = basic;
      } else if (c.scheme === "bearer" && c.realm) {
        const tokenUrl = new URL(c.realm);
        if (c.service) tokenUrl.searchParams.set("service", c.service);
        tokenUrl.searchParams.set("scope", c.scope ?? `repository:${repository}:pull,push`);
        const token = await doFetch(tokenUrl, basic ? { headers: { authorization: basic } } : {});
        if (!token.ok) throw new Error(`Registry ${host} refused a token: ${token.status}`);
        const body = await token.json() as { token?: string; access_token?: string };
        authorization = `Bearer ${body.token ?? body.access_token}`;
      } else {
        return response;
      }
    }
  }

  async function expect(response: Response, ok: number[], what: string): Promise<Response> {
    if (ok.includes(response.status)) return response;
    const text = (await response.text()).slice(0, 300);
    throw new Error(`Registry ${host} refused ${what}: ${response.status} ${text}`);
  }

  const probe = await call("GET", "/v2/");
  await probe.body?.cancel();
  await expect(probe, [200], "the API version check (GET /v2/)");
  let uploaded = 0;
  for (const blob of options.blobs) {
    const head = await call("HEAD", `/v2/${repository}/blobs/${blob.digest}`);
    await head.body?.cancel();
    if (head.status === 200) continue;
    const start = await expect(
      await call("POST", `/v2/${repository}/blobs/uploads/`),
      [202],
      "starting an upload",
    );
    await start.body?.cancel();
    const location = new URL(start.headers.get("location") ?? "", `${base}/`);
    location.searchParams.set("digest", blob.digest);
    const put = await expect(
      await call("PUT", location.href, {
        headers: { "content-type": "application/octet-stream" },
        body: blob.data as BodyInit,
      }),
      [201],
      `blob ${blob.digest}`,
    );
    await put.body?.cancel();
    uploaded++;
  }
  for (const m of options.platformManifests ?? []) {
    const sub = await expect(
      await call("PUT", `/v2/${repository}/manifests/${m.digest}`, {
        headers: { "content-type": "application/vnd.oci.image.manifest.v1+json" },
        body: m.data as BodyInit,
      }),
      [201],
      `the manifest ${m.digest}`,
    );
    await sub.body?.cancel();
  }
  const put = await expect(
    await call("PUT", `/v2/${repository}/manifests/${tag}`, {
      headers: {
        "content-type": options.manifestType ?? "application/vnd.oci.image.manifest.v1+json",
      },
      body: options.manifest as BodyInit,
    }),
    [201],
    "the manifest",
  );
  await put.body?.cancel();
  return {
    reference: `${host}/${repository}:${tag}`,
    digest: put.headers.get("docker-content-digest") ?? "",
    uploaded,
  };
}
