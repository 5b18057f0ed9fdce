/** Set-up calls from the bench process to the app, outside the measured load. */
export async function call<T = Record<string, unknown>> (baseUrl: string, path: string, init: { method?: string, body?: unknown, form?: Record<string, string> } = {}) {
  const { method = 'GET', body, form } = init
  const res = await fetch(baseUrl + path, {
    method,
    ...(body !== undefined ? { headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) } : {}),
    ...(form ? { headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: formBody(form) } : {})
  })
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${await res.text()}`)
  return res.json() as Promise<T>
}

/** Runs `task` `count` times, at most `width` at once. */
export async function times (count: number, width: number, task: (index: number) => Promise<unknown>) {
  let next = 0
  const lane = async () => { while (next < count) await task(next++) }
  await Promise.all(Array.from({ length: Math.min(width, count) }, lane))
}

/** A form body as autocannon sends it. */
export const formBody = (fields: Record<string, string>) => new URLSearchParams(fields).toString()
