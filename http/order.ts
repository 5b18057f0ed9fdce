import { httpProblems } from './errors.js'
import type { App } from './types.js'

const { PluginOutOfOrder: OutOfOrder } = httpProblems

export const ROUTE_PLUGINS = ['plinth-health', 'plinth-accounts', 'plinth-catalog', 'plinth-resource']

/** Fails the boot when one of plinth's route plugins was registered before `plugin`, which must precede them. */
export function assertBeforeRoutes (app: App, plugin: string, why: string) {
  const early = ROUTE_PLUGINS.filter((name) => app.hasPlugin(name))
  if (early.length > 0) throw new OutOfOrder(plugin, early.join(', '), why)
}
