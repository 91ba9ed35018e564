import { createReadStream } from 'node:fs';
import { appendFile, readFile, rename, stat, writeFile } from 'node:fs/promises';
import { type LineTooLong, splitLines } from './lines.js';
import { type ImportCounts, type ImportOptions, type ImportService, MAX_LINE_BYTES } from './service.js';

/**
 * An import file run from the command line (npm run users:import, docs/import.md "Running it"):
 * read as a stream line by line (memory stays flat whatever the file's size), refused lines
 * appended to the errors file as NDJSON (`{"line":…,"externalId":…,"reason":…}`), and the last
 * line of each committed batch written to the checkpoint file, so a run stopped anywhere resumes
 * after what committed. Progress goes to `progress` (a terminal's line rewritten in place, else
 * plain lines).
 */
export interface FileRun {
  path: string;
  errorsPath: string;
  checkpointPath: string;
  /** Ignore the checkpoint and start from the first line. */
  restart?: boolean;
  options: Omit<ImportOptions, 'afterLine'>;
  progress?: { write(text: string): void; isTTY?: boolean };
  /** Injected by tests to stop a run between batches, as a crash would. */
  afterBatch?: (counts: ImportCounts) => void;
}

export async function readCheckpoint(path: string): Promise<number | undefined> {
  try {
    const value = JSON.parse(await readFile(path, 'utf8')) as { line?: unknown };
    return typeof value.line === 'number' ? value.line : undefined;
  } catch {
    return undefined;
  }
}

/** The lines of a file, with the bytes read so far (for the time left). */
async function* linesOf(path: string, read: { bytes: number }): AsyncGenerator<string | LineTooLong> {
  async function* counted() {
    for await (const chunk of createReadStream(path) as AsyncIterable<Buffer>) {
      read.bytes += chunk.length;
      yield chunk;
    }
  }
  yield* splitLines(counted(), MAX_LINE_BYTES);
}

export async function importFile(
  service: ImportService,
  run: FileRun,
): Promise<ImportCounts & { afterLine: number }> {
  const afterLine = run.restart ? 0 : ((await readCheckpoint(run.checkpointPath)) ?? 0);
  if (afterLine === 0) await writeFile(run.errorsPath, '');
  const total = (await stat(run.path)).size;
  const read = { bytes: 0 };
  const started = performance.now();
  let lastShown = 0;
  const out = run.progress;
  const show = (c: ImportCounts, final: boolean) => {
    if (!out) return;
    const now = performance.now();
    if (!final && now - lastShown < (out.isTTY ? 200 : 5000)) return;
    lastShown = now;
    const seconds = (now - started) / 1000;
    const done = c.imported + c.updated + c.skipped + c.refused;
    const rate = seconds > 0 ? Math.round(done / seconds) : 0;
    const share = total > 0 ? read.bytes / total : 1;
    const left = share > 0 && share < 1 ? Math.round((seconds / share) * (1 - share)) : 0;
    const text =
      `${done} lines (${c.imported} imported, ${c.updated} updated, ${c.skipped} already there, ${c.refused} refused)` +
      ` · ${rate}/s · ${Math.round(share * 100)}% · ${final ? `${seconds.toFixed(1)} s` : `${left} s left`}`;
    out.write(out.isTTY ? `\r\u001b[2K${text}${final ? '\n' : ''}` : `${text}\n`);
  };
  const counts = await service.run(
    linesOf(run.path, read),
    { ...run.options, afterLine },
    {
      refused: (r) => appendFile(run.errorsPath, `${JSON.stringify(r)}\n`),
      committed: async (c, lastLine) => {
        if (!run.options.dryRun) {
          // Written aside then renamed: a crash leaves the old checkpoint or the new one, never half.
          await writeFile(`${run.checkpointPath}.tmp`, JSON.stringify({ line: lastLine }));
          await rename(`${run.checkpointPath}.tmp`, run.checkpointPath);
        }
        show(c, false);
        run.afterBatch?.(c);
      },
    },
  );
  show(counts, true);
  return { ...counts, afterLine };
}
