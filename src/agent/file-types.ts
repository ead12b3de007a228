/**
 * The file types a folder takes, as Letta's registry lists them (letta/services/file_processor/
 * file_types.py): each extension's media type and how its text is chunked.
 */

/** How a type's text is cut into chunks (Letta's ChunkingStrategy). */
export type ChunkingStrategy = 'code' | 'structured_data' | 'documentation' | 'line_based';

interface FileType {
  mime: string;
  strategy: ChunkingStrategy;
}

const type = (mime: string, strategy: ChunkingStrategy): FileType => ({ mime, strategy });

const BY_EXTENSION: Record<string, FileType> = {
  '.pdf': type('application/pdf', 'line_based'),
  '.txt': type('text/plain', 'line_based'),
  '.md': type('text/markdown', 'documentation'),
  '.markdown': type('text/markdown', 'documentation'),
  '.json': type('application/json', 'structured_data'),
  '.jsonl': type('application/jsonl', 'structured_data'),
  '.csv': type('text/csv', 'structured_data'),
  '.py': type('text/x-python', 'code'),
  '.js': type('text/javascript', 'code'),
  '.ts': type('text/x-typescript', 'code'),
  '.java': type('text/x-java-source', 'code'),
  '.cpp': type('text/x-c++', 'code'),
  '.cxx': type('text/x-c++', 'code'),
  '.c': type('text/x-c', 'code'),
  '.h': type('text/x-c', 'code'),
  '.cs': type('text/x-csharp', 'code'),
  '.php': type('text/x-php', 'code'),
  '.rb': type('text/x-ruby', 'code'),
  '.go': type('text/x-go', 'code'),
  '.rs': type('text/x-rust', 'code'),
  '.swift': type('text/x-swift', 'code'),
  '.kt': type('text/x-kotlin', 'code'),
  '.scala': type('text/x-scala', 'code'),
  '.r': type('text/x-r', 'code'),
  '.m': type('text/x-objective-c', 'code'),
  '.html': type('text/html', 'documentation'),
  '.htm': type('text/html', 'documentation'),
  '.css': type('text/css', 'structured_data'),
  '.scss': type('text/x-scss', 'structured_data'),
  '.sass': type('text/x-sass', 'structured_data'),
  '.less': type('text/x-less', 'structured_data'),
  '.vue': type('text/x-vue', 'code'),
  '.jsx': type('text/x-jsx', 'code'),
  '.tsx': type('text/x-tsx', 'code'),
  '.xml': type('application/xml', 'structured_data'),
  '.yaml': type('text/x-yaml', 'structured_data'),
  '.yml': type('text/x-yaml', 'structured_data'),
  '.toml': type('application/toml', 'structured_data'),
  '.ini': type('text/x-ini', 'structured_data'),
  '.cfg': type('text/x-conf', 'structured_data'),
  '.conf': type('text/x-conf', 'structured_data'),
  '.sh': type('text/x-shellscript', 'code'),
  '.bash': type('text/x-shellscript', 'code'),
  '.ps1': type('text/x-powershell', 'code'),
  '.bat': type('text/x-batch', 'code'),
  '.cmd': type('text/x-batch', 'code'),
  '.dockerfile': type('text/x-dockerfile', 'code'),
  '.sql': type('text/x-sql', 'code'),
};

/** Other names clients send for the same types. */
const ALIASES: Record<string, string> = {
  'text/x-markdown': 'text/markdown',
  'application/x-jsonlines': 'application/jsonl',
  'text/xml': 'application/xml',
  'application/javascript': 'text/javascript',
  'text/x-c++src': 'text/x-c++',
  'text/x-csrc': 'text/x-c',
  'application/x-yaml': 'text/x-yaml',
  'text/yaml': 'text/x-yaml',
  'application/yaml': 'text/x-yaml',
};

const BY_MIME = new Map<string, FileType>();
for (const fileType of Object.values(BY_EXTENSION))
  if (!BY_MIME.has(fileType.mime)) BY_MIME.set(fileType.mime, fileType);

const extensionOf = (name: string) => {
  const match = /(\.[^./\\]+)$/.exec(name.toLowerCase());
  return match ? match[1] : '';
};

/**
 * The media type of an upload, as Letta decides it: the client's Content-Type when it is one of the
 * supported types (parameters dropped), else the one the file name's extension says; undefined for
 * a type Letta does not take.
 */
export function mediaTypeOf(fileName: string, contentType: string | undefined): string | undefined {
  const declared = (contentType ?? '').split(';', 1)[0].trim().toLowerCase();
  const mime = ALIASES[declared] ?? declared;
  if (BY_MIME.has(mime)) return mime;
  return BY_EXTENSION[extensionOf(fileName)]?.mime;
}

/** How text of a media type is chunked (line-based for types the registry does not know). */
export function chunkingStrategyOf(mime: string | null): ChunkingStrategy {
  return (mime && BY_MIME.get(mime)?.strategy) || 'line_based';
}

/** Letta's 415 text. */
export const UNSUPPORTED_TYPE_HINT =
  'Supported types: PDF, text files (.txt, .md), JSON, CSV, HTML, and code files (.py, .js, .java, etc.).';
