/**
 * `npm run api-report`: writes the public surface of each entry point (package.json `exports`) to
 * `docs/api-report/<entry>.api.md` with API Extractor, so a change to what the package exports shows in review
 * as a change to a report. `npm run api-report:check` (run by `.ci/run`) writes nothing and exits 1 when a report
 * differs from the code, naming the command that updates it.
 *
 * API Extractor reads type declarations, not sources: they are emitted once, for every entry, into a temporary
 * folder (the TypeScript compiler API, `tsconfig.build.json`'s settings), then each entry is analysed in turn.
 */
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Extractor, ExtractorConfig, ExtractorLogLevel, type ExtractorMessage } from '@microsoft/api-extractor';
import ts from 'typescript';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
/** Where the reports are committed (not docs/api/, TypeDoc's output, which is not). */
export const REPORT_FOLDER = join(ROOT, 'docs', 'api-report');
const UPDATE_COMMAND = 'npm run api-report';

/** One entry point: its name as imported, its declaration file under `dist/`, and its report's file name. */
export interface ReportedEntry {
  name: string;
  declarations: string;
  reportFileName: string;
}

/** Every entry of package.json `exports` that has type declarations (not the JSON Schema, nor package.json). */
export function reportedEntries(): ReportedEntry[] {
  const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { name: string; exports: Record<string, string | { types?: string }> };
  return Object.entries(pkg.exports).flatMap(([subpath, target]) => {
    if (typeof target !== 'object' || target.types === undefined) return [];
    const name = subpath === '.' ? pkg.name : `${pkg.name}/${subpath.slice(2)}`;
    return [{ name, declarations: relative('dist', target.types), reportFileName: `${name.replace('/', '-')}.api.md` }];
  });
}

/** Emits the declarations of `src/` into `outDir`, as `npm run build` would; throws on a compile error. */
function emitDeclarations(outDir: string): void {
  const parsed = ts.getParsedCommandLineOfConfigFile(join(ROOT, 'tsconfig.build.json'), { outDir, declaration: true, emitDeclarationOnly: true, declarationMap: false, sourceMap: false }, {
    ...ts.sys,
    onUnRecoverableConfigFileDiagnostic: (diagnostic) => {
      throw new Error(ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n'));
    },
  });
  if (!parsed) throw new Error('tsconfig.build.json could not be read');
  const program = ts.createProgram({ rootNames: parsed.fileNames, options: parsed.options });
  const emitted = program.emit();
  const errors = [...ts.getPreEmitDiagnostics(program), ...emitted.diagnostics].filter((d) => d.category === ts.DiagnosticCategory.Error);
  if (errors.length > 0) {
    throw new Error(ts.formatDiagnostics(errors, { getCanonicalFileName: (f) => f, getCurrentDirectory: () => ROOT, getNewLine: () => '\n' }));
  }
}

/**
 * The surface of one entry, compared with (check) or written to (update) its report. Only the compiler's own
 * errors are printed: API Extractor's advice (release tags, a type exported by another entry) does not fit a
 * package with several entries, and the report is the check.
 */
function reportEntry(entry: ReportedEntry, declarationsDir: string, tempReportDir: string, check: boolean): boolean {
  const entryFile = join(declarationsDir, entry.declarations);
  const config = ExtractorConfig.prepare({
    configObject: {
      projectFolder: ROOT,
      mainEntryPointFilePath: entryFile,
      compiler: {
        overrideTsconfig: {
          compilerOptions: { module: 'NodeNext', moduleResolution: 'NodeNext', target: 'ES2022', lib: ['ES2023', 'DOM'], types: ['node'], strict: true, skipLibCheck: true },
          files: [entryFile],
        },
      },
      apiReport: { enabled: true, reportFileName: entry.reportFileName, reportFolder: REPORT_FOLDER, reportTempFolder: tempReportDir },
      docModel: { enabled: false },
      dtsRollup: { enabled: false },
      tsdocMetadata: { enabled: false },
      messages: {
        compilerMessageReporting: { default: { logLevel: ExtractorLogLevel.Error } },
        extractorMessageReporting: { default: { logLevel: ExtractorLogLevel.None, addToApiReportFile: false } },
        tsdocMessageReporting: { default: { logLevel: ExtractorLogLevel.None, addToApiReportFile: false } },
      },
    },
    configObjectFullPath: join(ROOT, 'docs', 'api-report.json'),
    packageJsonFullPath: join(ROOT, 'package.json'),
  });
  const result = Extractor.invoke(config, {
    localBuild: !check,
    messageCallback: (message: ExtractorMessage) => {
      if (message.logLevel === ExtractorLogLevel.Error) console.error(`${entry.name}: ${message.text}`);
      message.handled = true;
    },
  });
  if (result.errorCount > 0) throw new Error(`${entry.name}: API Extractor reported ${result.errorCount} error(s)`);
  return result.apiReportChanged;
}

/** Writes (or, with `check`, compares) every report; returns the names of the entries whose report differs. */
export function runApiReport(check: boolean): string[] {
  const work = mkdtempSync(join(tmpdir(), 'api-report-'));
  try {
    emitDeclarations(join(work, 'declarations'));
    if (!check) mkdirSync(REPORT_FOLDER, { recursive: true });
    const entries = reportedEntries();
    const changed = entries.filter((entry) => reportEntry(entry, join(work, 'declarations'), join(work, 'reports'), check)).map((entry) => entry.name);
    // A report whose entry is gone is stale too.
    const expected = new Set(entries.map((entry) => entry.reportFileName));
    const stale = existsSync(REPORT_FOLDER) ? readdirSync(REPORT_FOLDER).filter((file) => file.endsWith('.api.md') && !expected.has(file)) : [];
    for (const file of stale) {
      if (check) changed.push(`${file} (no such entry)`);
      else rmSync(join(REPORT_FOLDER, file));
    }
    return changed;
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const check = process.argv.includes('--check');
  const changed = runApiReport(check);
  if (check && changed.length > 0) {
    console.error(`The public surface differs from docs/api-report/ for: ${changed.join(', ')}.`);
    console.error(`If the change is meant, run \`${UPDATE_COMMAND}\` and commit docs/api-report/ with it.`);
    process.exit(1);
  }
  console.log(check ? 'API reports match the code.' : `API reports written to docs/api-report/${changed.length > 0 ? ` (changed: ${changed.join(', ')})` : ''}.`);
}
