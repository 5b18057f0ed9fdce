/** The import rules of the layout (docs/architecture.md): no cycles, and no lower layer reaching up. */
const lower = '^(http|db|concurrency|schemas|mail|telemetry)/'
module.exports = {
  forbidden: [
    { name: 'no-cycles', severity: 'error', from: {}, to: { circular: true } },
    {
      name: 'config-only-at-the-entry',
      comment: 'config.ts maps the environment; only the entry points read it',
      severity: 'error',
      from: { path: '^(http|db|concurrency|schemas|mail|telemetry|plugins|routes)/' },
      to: { path: '^config\\.ts$' }
    },
    {
      name: 'lower-layers-stay-below',
      comment: 'building blocks and the data layer never import plugins, routes or the entry points',
      severity: 'error',
      from: { path: lower },
      to: { path: '^(plugins|routes|cli)/|^(app|server|index|config)\\.ts$' }
    },
    {
      name: 'plugins-below-routes',
      severity: 'error',
      from: { path: '^plugins/' },
      to: { path: '^routes/' }
    }
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '^(node_modules|dist|build|test|bench|scripts|client)/' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' }
  }
}
