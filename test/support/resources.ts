import type { Test } from 'tap'
import { API_PREFIX, type App } from '../../app.js'
import type { Config } from '../../config.js'
import resourcePlugin, { type ResourceOptions } from '../../routes/resources/index.js'
import { build } from './app.js'

/**
 * The app with these resources under /api/v1. Plain names are the app's own RESOURCES (mounted
 * by app.ts when it does, else here); resources with options are always registered here.
 */
export async function buildResources (t: Test, resources: Array<string | ResourceOptions>, settings: Partial<Config> = {}): Promise<App> {
  const RESOURCES = resources.filter((resource) => typeof resource === 'string')
  const app = await build(t, { RESOURCES, ...settings })
  for (const resource of resources) {
    const options = typeof resource === 'string' ? { name: resource } : resource
    if (!app.hasPlugin(`plinth-resource:${options.name}`)) await app.register(resourcePlugin, { prefix: API_PREFIX, ...options })
  }
  return app
}

export interface RecordBody {
  id: number
  title: string
  description: string | null
}

/** POSTs a record and returns the created body; throws unless the answer is 201. */
export async function createRecord (app: App, name: string, payload: Record<string, unknown>): Promise<RecordBody> {
  const res = await app.inject({ method: 'POST', url: `${API_PREFIX}/${name}/`, payload })
  if (res.statusCode !== 201) throw new Error(`POST ${name} ${JSON.stringify(payload).slice(0, 60)}: ${res.statusCode} ${res.payload}`)
  return res.json()
}

export function notFound (name: string, id: number | string) {
  return { type: 'about:blank', title: 'Not Found', status: 404, detail: `${name} ${id} not found`, code: 'RESOURCE_NOT_FOUND' }
}
