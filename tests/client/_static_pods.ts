/**
 * Static pod manifests a test edits: with `serve --simulate` and no churn,
 * the only changes on the node, made when the test says so.
 *
 * @module
 */

/**
 * Static pod manifests in a directory of their own, each with a fixed UID
 * and a `gen` label the test bumps: the only changes on the node, made one
 * at a time (written beside the directory, then renamed in, so the daemon
 * never reads half a file).
 */
export class StaticPods implements AsyncDisposable {
  readonly dir: string;
  readonly #gens: number[];
  /** Changes made so far. */
  changes = 0;

  private constructor(dir: string, count: number) {
    this.dir = dir;
    this.#gens = new Array(count).fill(0);
  }

  /**
   * @param count Pods, named `static-<i>` in kube-system, UID `static-uid-<i>`.
   * @returns The manifests, written at gen 0 in a new temporary directory.
   */
  static async create(count: number): Promise<StaticPods> {
    const pods = new StaticPods(await Deno.makeTempDir({ prefix: "pods-api-static-" }), count);
    await Deno.mkdir(`${pods.dir}/manifests`);
    for (let i = 0; i < count; i++) await pods.#write(i);
    return pods;
  }

  /** The daemon's flags: these manifests, rescanned only on file events. */
  get flags(): string[] {
    return ["--pod-manifest-path", `${this.dir}/manifests`, "--file-check-frequency", "10m"];
  }

  uid(i: number): string {
    return `static-uid-${i}`;
  }

  /** The gen every pod has now, by UID. */
  expected(): Map<string, string> {
    return new Map(this.#gens.map((gen, i) => [this.uid(i), String(gen)]));
  }

  /** Bumps pod `i`'s gen. */
  async bump(i: number): Promise<void> {
    this.#gens[i]!++;
    this.changes++;
    await this.#write(i);
  }

  async #write(i: number): Promise<void> {
    const manifest = {
      apiVersion: "v1",
      kind: "Pod",
      metadata: {
        name: `static-${i}`,
        namespace: "kube-system",
        uid: this.uid(i),
        labels: { app: "static", gen: String(this.#gens[i]) },
      },
      spec: { containers: [{ name: "app", image: "registry.k8s.io/pause:3.10" }] },
    };
    await Deno.writeTextFile(`${this.dir}/next-${i}.json`, JSON.stringify(manifest));
    await Deno.rename(`${this.dir}/next-${i}.json`, `${this.dir}/manifests/static-${i}.json`);
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await Deno.remove(this.dir, { recursive: true }).catch(() => {});
  }
}
