// Merged by @jupyter/builder into its rspack configuration (package.json: jupyterlab.webpackConfig).
// Module ids by module order rather than hashed from module names: the federation container's
// name holds the absolute path of lib/index.js, so hashed ids (and the remoteEntry file name)
// changed with the directory the build ran in, and a clean build could not reproduce the
// committed one byte for byte.
module.exports = {
  optimization: { moduleIds: 'natural' }
};
