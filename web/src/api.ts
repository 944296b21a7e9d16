// The JSON endpoints of `lode ui` (docs/ui.md). The token comes in the printed URL
// (?token=), is kept in this tab's sessionStorage (this origin's alone: scheme, host
// and port; a cookie would go to every port of the host) and travels in an
// Authorization header; every POST is JSON from this origin.

const TOKEN_KEY = "lode-ui-token";

// On load: the token from the address, kept, and the address cleaned (so it is not in
// a bookmark or a screenshot); a reload finds it in sessionStorage.
const fromUrl = new URLSearchParams(location.search).get("token");
if (fromUrl !== null) {
  sessionStorage.setItem(TOKEN_KEY, fromUrl);
  history.replaceState(null, "", location.pathname + location.hash);
}

function headers(extra: Record<string, string> = {}): Record<string, string> {
  const t = sessionStorage.getItem(TOKEN_KEY);
  if (t === null) throw new ApiError(401, "no token in this tab: open the URL that lode ui printed", null);
  return { ...extra, Authorization: `Bearer ${t}` };
}

export interface Diag {
  line: number;
  column: number;
  path: string;
  message: string;
}

export interface ValidateDoc {
  file: string;
  valid: boolean;
  errors: Diag[];
}

export class ApiError extends Error {
  constructor(
    public status: number,
    message: string,
    public body: any,
  ) {
    super(message);
  }
}

async function answer(r: Response): Promise<any> {
  let body: any = null;
  try {
    body = await r.json();
  } catch {
    body = { error: `${r.status} ${r.statusText}` };
  }
  if (!r.ok) throw new ApiError(r.status, body?.error ?? `HTTP ${r.status}`, body);
  return body;
}

export async function get(path: string): Promise<any> {
  return answer(await fetch(path, { credentials: "omit", cache: "no-store", headers: headers() }));
}

export async function post(path: string, body: unknown): Promise<any> {
  return answer(
    await fetch(path, {
      method: "POST",
      credentials: "omit",
      headers: headers({ "Content-Type": "application/json" }),
      body: JSON.stringify(body),
    }),
  );
}

// "50h15m" for 181500 seconds, as lode prints durations.
export function duration(s: number): string {
  if (s === 0) return "0s";
  const units: [string, number][] = [
    ["d", 86400],
    ["h", 3600],
    ["m", 60],
    ["s", 1],
  ];
  let out = "";
  let rest = s;
  for (const [u, n] of units) {
    if (rest >= n) {
      out += `${Math.floor(rest / n)}${u}`;
      rest %= n;
    }
  }
  return out;
}

export function el<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Record<string, string> = {},
  ...children: (Node | string)[]
): HTMLElementTagNameMap[K] {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === "class") e.className = v;
    else e.setAttribute(k, v);
  }
  for (const c of children) e.append(c);
  return e;
}
