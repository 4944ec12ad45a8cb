export declare const EXTRAS: string;
export declare function extrasInstalled(): boolean;
