#include "cli/version.h"

#include "commit_info.h"  // generated: LOAM_COMMIT
#include "dataset/deletion_file.h"
#include "dataset/version_file.h"
#include "engine/format_stamp.h"
#include "format/fragment_footer.h"
#include "manifest/directory.h"

namespace loam::cli {
namespace {

std::string Range(int oldest, int newest) {
  return oldest == newest ? std::to_string(newest)
                          : std::to_string(oldest) + " to " + std::to_string(newest);
}

}  // namespace

std::string VersionText() {
  return std::string("loam ") + LOAM_VERSION + " (commit " + LOAM_COMMIT + ")\n" +
         "workspace format " + std::to_string(kWorkspaceFormat) + " (format " +
         std::to_string(kPredecessorFormat) + " and unstamped heads: 'loam migrate')\n" +
         "head directory format " + std::to_string(kManifestFormatVersion) + ", reads " +
         Range(kOldestManifestFormat, kManifestFormatVersion) + "\n" + "version file format " +
         std::to_string(kVersionFileFormat) + ", reads " +
         Range(kOldestVersionFileFormat, kVersionFileFormat) + "\n" + "fragment format " +
         std::to_string(kFragmentFormatVersion) + ", reads " +
         Range(kFragmentFormatVersion, kFragmentFormatVersion) + "\n" + "deletion file format " +
         std::to_string(kDeletionFileFormat) + ", reads " +
         Range(kOldestDeletionFileFormat, kDeletionFileFormat);
}

}  // namespace loam::cli
