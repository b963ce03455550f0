declare module "@json-editor/json-editor";
