# Writes OUT, a header naming the commit `loam --version` reports, only when
# it changed (so only a new commit recompiles version.cc). A tree that is
# not a git checkout names "unknown".
set(commit unknown)
find_package(Git QUIET)
if(GIT_FOUND)
  execute_process(COMMAND ${GIT_EXECUTABLE} rev-parse --short=12 HEAD
                  WORKING_DIRECTORY ${SOURCE_DIR} OUTPUT_VARIABLE head
                  OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE rc)
  if(rc EQUAL 0 AND head MATCHES "^[0-9a-f]+$")
    set(commit ${head})
  endif()
endif()
file(WRITE ${OUT}.tmp "#define LOAM_COMMIT \"${commit}\"\n")
file(COPY_FILE ${OUT}.tmp ${OUT} ONLY_IF_DIFFERENT)
file(REMOVE ${OUT}.tmp)
