export declare const BUNDLE: string;
export declare const BUILD_SOURCES: readonly string[];
export declare function staleBuild(bundle?: string, sources?: readonly string[]): string | undefined;
