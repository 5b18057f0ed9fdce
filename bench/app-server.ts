import { buildApp } from '../app.js'
import { main } from './child.js'

// bench/run.js always sets BENCH_DATABASE_URL for this child.
main(() => buildApp({ DATABASE_URL: process.env.BENCH_DATABASE_URL ?? 'memory://', LOG_LEVEL: 'silent' }, { logger: false }))
