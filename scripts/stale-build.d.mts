export declare function staleBuild(bundle?: string, sources?: readonly string[]): string | undefined;
