import type { Test } from 'tap'
import { API_PREFIX, type App } from '../../app.js'
import type { Config } from '../../config.js'
import catalog from '../../routes/catalog/index.js'
import { build } from './app.js'

// Small limits, so clamping and paging show with a handful of items.
export const LIMITS = { DEFAULT_PAGE_LIMIT: 5, MAX_PAGE_LIMIT: 10 }

export const ITEMS = `${API_PREFIX}/items`
export const ISO_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/

/** The app with the catalog under /api/v1: registered here unless app.ts already does it. */
export async function buildCatalog (t: Test, settings: Partial<Config> = {}): Promise<App> {
  const config = { ...LIMITS, ...settings }
  const app = await build(t, config)
  if (!app.hasPlugin('plinth-catalog')) {
    await app.register(catalog, { prefix: API_PREFIX, defaultLimit: config.DEFAULT_PAGE_LIMIT, maxLimit: config.MAX_PAGE_LIMIT })
  }
  return app
}

export interface ItemBody {
  id: number
  name: string
  description: string | null
  price: number
  in_stock: boolean
  created_at: string
}

/** POSTs an item and returns the created body; throws unless the answer is 201. */
export async function createItem (app: App, payload: Record<string, unknown>): Promise<ItemBody> {
  const res = await app.inject({ method: 'POST', url: ITEMS, payload })
  if (res.statusCode !== 201) throw new Error(`POST ${JSON.stringify(payload).slice(0, 60)}: ${res.statusCode} ${res.payload}`)
  return res.json()
}

export function notFound (id: number | string) {
  return { type: 'about:blank', title: 'Not Found', status: 404, detail: `item ${id} not found`, code: 'CATALOG_ITEM_NOT_FOUND' }
}
