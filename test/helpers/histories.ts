import fs from 'node:fs';
import path from 'node:path';
import { temporal } from '@temporalio/proto';

/**
 * The corpus of recorded workflow histories (test/fixtures/histories/): real histories of this server's
 * workflows, each in the state it was caught in, which test/replay.test.ts replays against the current
 * workflow code. test/record-histories.record.ts (`npm run histories:record`) adds to it.
 */
export const HISTORIES_DIR = path.join(__dirname, '..', 'fixtures', 'histories');
export const MANIFEST_FILE = path.join(HISTORIES_DIR, 'manifest.json');

export interface HistoryEntry {
  /** The file in HISTORIES_DIR: a temporal.api.history.v1.History, binary (.binpb) or JSON (.json). */
  file: string;
  /** The scenario that recorded it (test/record-histories.record.ts); several files may share one. */
  scenario: string;
  /** The workflow type of its first event. */
  workflowType: string;
  /** What the workflow was doing when its history was taken. */
  state: string;
  /** The branches of the workflow it covers (test/helpers/history-branches.ts). */
  branches?: string[];
  /** When it was recorded (a date), and from which commit of this repository. */
  recorded: string;
  commit?: string;
}

export interface Manifest {
  histories: HistoryEntry[];
}

export function readManifest(): Manifest {
  return JSON.parse(fs.readFileSync(MANIFEST_FILE, 'utf8')) as Manifest;
}

export function writeManifest(manifest: Manifest): void {
  fs.writeFileSync(MANIFEST_FILE, `${JSON.stringify(manifest, null, 2)}\n`);
}

/** The history files in the corpus folder, whether the manifest lists them or not. */
export function historyFiles(dir = HISTORIES_DIR): string[] {
  return fs
    .readdirSync(dir)
    .filter((file) => file.endsWith('.binpb') || file.endsWith('.json'))
    .filter((file) => file !== path.basename(MANIFEST_FILE))
    .sort();
}

/** A history file of the corpus, decoded: binary protobuf, or the JSON of the proto (History.toJSON). */
export function loadHistory(file: string, dir = HISTORIES_DIR): temporal.api.history.v1.History {
  const bytes = fs.readFileSync(path.join(dir, file));
  return file.endsWith('.json')
    ? temporal.api.history.v1.History.fromObject(JSON.parse(bytes.toString('utf8')))
    : temporal.api.history.v1.History.decode(bytes);
}

export const workflowTypeOf = (history: temporal.api.history.v1.IHistory): string =>
  history.events?.[0]?.workflowExecutionStartedEventAttributes?.workflowType?.name ?? 'unknown';
