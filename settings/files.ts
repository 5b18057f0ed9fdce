import { readFileSync, statSync } from 'node:fs'
import { readTemplatesDir } from '../mail/templates.js'
import type { ResourceTableSpec } from '../db/resource-table.js'
import { resourceTableSpec } from '../routes/resources/constraints.js'
import { resolveResourceOptions, type ResolvedResourceOptions } from '../routes/resources/options.js'
import { ConfigError } from './error.js'
import { readResourcesFile, type FileResourceDefinition } from './resources-file.js'

export interface FileSettings {
  RESOURCES: string[]
  RESOURCES_FILE?: string
  JWT_PRIVATE_KEY?: string
  JWT_PRIVATE_KEY_FILE?: string
  MAIL_TEMPLATES_DIR?: string
}

/** What the settings' files hold, read once per process. */
export interface SettingFiles {
  resources: FileResourceDefinition[]
  /** JWT_PRIVATE_KEY, or the key in the file JWT_PRIVATE_KEY_FILE names; none when neither is set. */
  privateKey?: string
  templates: ReturnType<typeof readTemplatesDir>
}

/** Reads every file the settings name; a missing or malformed one is a ConfigError naming its variable. */
export function readSettingFiles (settings: FileSettings): SettingFiles {
  return { resources: readResources(settings), privateKey: readPrivateKey(settings), templates: readTemplates(settings) }
}

function readResources ({ RESOURCES, RESOURCES_FILE }: FileSettings): FileResourceDefinition[] {
  if (RESOURCES_FILE === undefined) return []
  const resources = readResourcesFile(RESOURCES_FILE, (message) => new ConfigError(message))
  const both = resources.find(({ options }) => RESOURCES.includes(options.name))
  if (both) throw new ConfigError(`"${both.options.name}" is both in RESOURCES and in RESOURCES_FILE; keep one`)
  return resources
}

export function readPrivateKey ({ JWT_PRIVATE_KEY, JWT_PRIVATE_KEY_FILE: path }: Omit<FileSettings, 'RESOURCES'>): string | undefined {
  if (path === undefined) return JWT_PRIVATE_KEY
  try {
    return readFileSync(path, 'utf8')
  } catch (err) {
    throw new ConfigError(`JWT_PRIVATE_KEY_FILE ${path}: ${(err as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file' : (err as Error).message}`)
  }
}

function readTemplates ({ MAIL_TEMPLATES_DIR: dir }: FileSettings): SettingFiles['templates'] {
  if (dir === undefined) return {}
  try {
    if (!statSync(dir).isDirectory()) throw new Error('not a folder')
    return readTemplatesDir(dir)
  } catch (err) {
    throw new ConfigError(`MAIL_TEMPLATES_DIR ${dir}: ${(err as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such folder' : (err as Error).message}`)
  }
}

/** The tables of RESOURCES_FILE's resources, for processes that prepare the database without serving it. */
export function fieldTablesOf ({ resources }: Pick<SettingFiles, 'resources'>): ResourceTableSpec[] {
  return fieldTableSpecs(resources.map(({ options }) => resolveResourceOptions(options)))
}

/** The tables of these resources that have fields, in order: a reference names a resource given before it, as at boot. */
export function fieldTableSpecs (resolved: ResolvedResourceOptions[]): ResourceTableSpec[] {
  const tables = new Map<string, string>()
  return resolved.flatMap((resource) => {
    tables.set(resource.name, resource.table)
    return resource.fields ? [resourceTableSpec(resource, (name) => tables.get(name))] : []
  })
}
