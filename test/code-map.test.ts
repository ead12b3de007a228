/**
 * The layers of src/ are one list, LAYERS in .dependency-cruiser.cjs: dependency-cruiser enforces it
 * (`npm run lint:deps`), and docs/design.md's code map shows it. Here the map is held to the list, and
 * the rules are run on a small tree that breaks them, to show that an import up the layers fails.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';

const root = path.join(__dirname, '..');

interface Layer {
  name: string;
  label: string;
  path: string;
}
const { LAYERS, mayImport } = createRequire(__filename)(path.join(root, '.dependency-cruiser.cjs')) as {
  LAYERS: Layer[];
  mayImport(name: string): string;
};

/** The code map's rows: the cells of each line of its table. */
function codeMapRows(): string[][] {
  const design = fs.readFileSync(path.join(root, 'docs/design.md'), 'utf8');
  const start = design.indexOf('## Code map\n');
  const section = design.slice(start, design.indexOf('\n## ', start + 1));
  return section
    .split('\n')
    .filter((line) => line.startsWith('| '))
    .slice(2)
    .map((line) => line.split(/\s+\|\s+|^\|\s+|\s+\|$/).filter(Boolean));
}

describe("docs/design.md's code map", () => {
  const rows = codeMapRows();

  it('has a row per layer, top to bottom, saying what the rules let it import', () => {
    const topDown = [...LAYERS].reverse();
    const layerRows = rows.filter(([label]) => LAYERS.some((layer) => layer.label === label));
    expect(layerRows.map(([label]) => label)).toEqual(topDown.map((layer) => layer.label));
    for (const layer of topDown) {
      const [, , imports] = rows.find(([label]) => label === layer.label)!;
      expect({ layer: layer.name, imports }).toEqual({ layer: layer.name, imports: mayImport(layer.name) });
    }
  });

  it('places every folder of src/ in a layer', () => {
    const folders = fs
      .readdirSync(path.join(root, 'src'), { withFileTypes: true })
      .filter((entry) => entry.isDirectory())
      .map((entry) => `src/${entry.name}/index.ts`);
    const unplaced = folders.filter((file) => !LAYERS.some((layer) => new RegExp(layer.path).test(file)));
    expect(folders.length).toBeGreaterThan(10);
    expect(unplaced).toEqual([]);
  });
});

describe('the layer rules', () => {
  let tree: string;
  beforeAll(() => {
    tree = fs.mkdtempSync(path.join(os.tmpdir(), 'code-map-'));
    const files: Record<string, string> = {
      'tsconfig.json': '{"compilerOptions": {"strict": true}}',
      'src/config.ts': 'export interface Config { port: number }\nexport const port = 8283;\n',
      'src/api/app.ts': 'export const app = 1;\n',
      'src/ids.ts': 'export const newId = () => "id";\n',
      // Down: allowed.
      'src/db/down.ts': "import { newId } from '../ids';\nexport const down = () => [newId()];\n",
      // Up: the HTTP layer, and the wiring's config, even its type alone.
      'src/db/up.ts': "import { app } from '../api/app';\nexport const up = app;\n",
      'src/db/config-type.ts':
        "import type { Config } from '../config';\nexport const port = (config: Config) => config.port;\n",
      // A folder with no place in the layers.
      'src/widgets/widget.ts': "import { down } from '../db/down';\nexport const widget = down;\n",
    };
    for (const [file, text] of Object.entries(files)) {
      fs.mkdirSync(path.dirname(path.join(tree, file)), { recursive: true });
      fs.writeFileSync(path.join(tree, file), text);
    }
  });
  afterAll(() => fs.rmSync(tree, { recursive: true, force: true }));

  it('fail on an import up the layers, and on nothing else of the tree', () => {
    const cruise = path.join(root, 'node_modules/dependency-cruiser/bin/dependency-cruise.mjs');
    const config = path.join(root, '.dependency-cruiser.cjs');
    let output: string;
    try {
      output = execFileSync(process.execPath, [cruise, '--config', config, '--output-type', 'json', 'src'], {
        cwd: tree,
        encoding: 'utf8',
      });
    } catch (error) {
      // A violation makes depcruise exit with an error; its report is on stdout all the same.
      output = (error as { stdout: string }).stdout;
    }
    const violations = (
      JSON.parse(output) as {
        summary: { violations: { rule: { name: string }; from: string; to: string }[] };
      }
    ).summary.violations.map(({ rule, from, to }) => `${rule.name}: ${from} → ${to}`);
    expect(violations.sort()).toEqual([
      'layer-db: src/db/config-type.ts → src/config.ts',
      'layer-db: src/db/up.ts → src/api/app.ts',
      'src-folder-in-a-layer: src/widgets/widget.ts → src/db/down.ts',
    ]);
  });
});
