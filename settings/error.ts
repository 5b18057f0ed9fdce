import { defineProblems } from '../http/problem-error.js'

/** A setting that is missing or malformed stops the boot, saying which. */
export const configProblems = defineProblems({ ConfigError: { code: 'PLINTH_INVALID_CONFIG', message: '%s' } })
export const { ConfigError } = configProblems
