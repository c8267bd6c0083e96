--[[ runtime-predictor's job_submit plugin for Slurm (JobSubmitPlugins=lua; this file beside slurm.conf).

At submission it sends the job's name, comment, partition, working directory, #PREDICTOR lines and PREDICTOR_JOB
variable, and its submit-time context as job_desc names it (user_id, user_name, group_id, account, qos, min_cpus,
min_nodes, pn_min_memory, array_inx; a NO_VAL-like value is sent as null) to the predictor API, which maps it to an
algorithm by the site's rule file, or estimates it by its job class from its user's history. On an answer (key=value lines; it
reads time_min, time_limit, mem, comment and estimate, each at most once, and ignores the answer otherwise) it sets
time_min to the estimate and the comment to the user's comment plus the estimate's tag; the time limit is set
only when the job has none and RAISE_MISSING_LIMIT is true, the memory (mem, megabytes per node) only when the
user asked for none (no --mem, --mem-per-cpu or --mem-per-gpu) and RAISE_MISSING_MEMORY is true. On no answer
within TIMEOUT_S, or an error, it changes nothing: it logs the first failure and the recovery, not every job. It
never rejects a job and never lowers a limit or a memory request.
It sends PLUGIN_TOKEN (when set) so that the API knows it is the plugin: only the plugin is answered from a user's
history; the file is then readable by slurmctld's user alone.
Written by `predictor slurm install-plugin`, which fills in the five settings below. ]]

local API = "@API@"
local TIMEOUT_S = @TIMEOUT_S@
local RAISE_MISSING_LIMIT = @RAISE_MISSING_LIMIT@
local RAISE_MISSING_MEMORY = @RAISE_MISSING_MEMORY@
local PLUGIN_TOKEN = "@PLUGIN_TOKEN@"

local http = require("socket.http")
local ltn12 = require("ltn12")

local failing = false

local function json_string(value)
    if value == nil then
        return "null"
    end
    local escaped = tostring(value):gsub('[%c"\\]', function(c)
        if c == '"' then return '\\"' end
        if c == "\\" then return "\\\\" end
        return string.format("\\u%04x", c:byte())
    end)
    return '"' .. escaped .. '"'
end

local function minutes(value)
    if value == nil or value == slurm.NO_VAL or value == slurm.INFINITE or value == 0 then
        return "null"
    end
    return tostring(value)
end

-- A count job_desc gives as a number: null when unset (nil, NO_VAL, NO_VAL64, INFINITE) or not a plain count
-- (pn_min_memory with its per-CPU flag, 2^63, set), else the whole number.
local function count(value)
    if type(value) ~= "number" or value == slurm.NO_VAL or value == slurm.INFINITE or value < 0 or value >= 4294967294 then
        return "null"
    end
    return string.format("%.0f", value)
end

local function directives(script)
    local words = {}
    for line in (script or ""):gmatch("[^\n]+") do
        local rest = line:match("^%s*#PREDICTOR%s*(.*)$")
        if rest then
            table.insert(words, rest)
        end
    end
    return table.concat(words, " ")
end

-- Whether the user asked for memory: per node (--mem), per CPU (--mem-per-cpu) or per GPU (--mem-per-gpu).
local function memory_given(job_desc)
    return job_desc.min_mem_per_node ~= nil or job_desc.min_mem_per_cpu ~= nil or (job_desc.mem_per_tres or "") ~= ""
end

local function partition_of(job_desc, part_list)
    for name, part in pairs(part_list or {}) do
        if (job_desc.partition and name == job_desc.partition) or (not job_desc.partition and part.flag_default == 1) then
            return part
        end
    end
    return nil
end

local function body(job_desc, part_list)
    local env = job_desc.environment
    local part = partition_of(job_desc, part_list)
    return "{" .. table.concat({
        '"name":' .. json_string(job_desc.name or ""),
        '"comment":' .. json_string(job_desc.comment or ""),
        '"partition":' .. json_string(job_desc.partition or (part and part.name)),
        '"work_dir":' .. json_string(job_desc.work_dir),
        '"directives":' .. json_string(directives(job_desc.script)),
        '"environment":' .. json_string(env and env["PREDICTOR_JOB"] or ""),
        '"time_limit":' .. minutes(job_desc.time_limit),
        '"default_time":' .. minutes(part and part.default_time),
        '"raise_missing_limit":' .. tostring(RAISE_MISSING_LIMIT),
        '"memory_given":' .. tostring(memory_given(job_desc)),
        '"raise_missing_memory":' .. tostring(RAISE_MISSING_MEMORY),
        '"user_id":' .. count(job_desc.user_id),
        '"user_name":' .. json_string(job_desc.user_name),
        '"group_id":' .. count(job_desc.group_id),
        '"account":' .. json_string(job_desc.account),
        '"qos":' .. json_string(job_desc.qos),
        '"min_cpus":' .. count(job_desc.min_cpus),
        '"min_nodes":' .. count(job_desc.min_nodes),
        '"pn_min_memory":' .. count(job_desc.pn_min_memory),
        '"array_inx":' .. json_string(job_desc.array_inx),
    }, ",") .. "}"
end

-- The fields read from the answer, each with the pattern its value must match and what that is; any other key is
-- ignored.
local WHOLE = { "^%d+$", "a whole number" }
local FIELDS = { time_min = WHOLE, time_limit = WHOLE, mem = { "^%d+M$", "megabytes (e.g. 3500M)" }, comment = { "" }, estimate = { "" } }

-- The answer's key=value lines as a table of the expected fields; nil and why for a line that is not key=value, a
-- field given twice or a limit or size not in its form, so that nothing a value holds can set another field.
local function parse_answer(text)
    local answer = {}
    for line in text:gmatch("[^\n]+") do
        local key, value = line:match("^([%w_]+)=(.*)$")
        if not key then
            return nil, "a line is not key=value"
        end
        if FIELDS[key] then
            if answer[key] then
                return nil, key .. " given twice"
            end
            if not value:match(FIELDS[key][1]) then
                return nil, key .. " is not " .. FIELDS[key][2]
            end
            answer[key] = value
        end
    end
    return answer
end

local function failed(why)
    if not failing then
        slurm.log_info("predictor: %s; jobs are submitted unchanged until it answers again", why)
        failing = true
    end
end

function slurm_job_submit(job_desc, part_list, submit_uid)
    local request = body(job_desc, part_list)
    local chunks = {}
    http.TIMEOUT = TIMEOUT_S
    local headers = { ["content-type"] = "application/json", ["content-length"] = tostring(#request) }
    if PLUGIN_TOKEN ~= "" then
        headers["x-predictor-plugin-token"] = PLUGIN_TOKEN
    end
    local ok, code = http.request({
        url = API .. "/v1/slurm/estimate?format=text",
        method = "POST",
        headers = headers,
        source = ltn12.source.string(request),
        sink = ltn12.sink.table(chunks),
    })
    if not ok then
        failed("the API at " .. API .. " did not answer (" .. tostring(code) .. ")")
        return slurm.SUCCESS
    end
    if code == 204 then
        return slurm.SUCCESS
    end
    if code ~= 200 then
        failed("the API answered " .. tostring(code) .. ": " .. table.concat(chunks):sub(1, 200))
        return slurm.SUCCESS
    end
    local answer, problem = parse_answer(table.concat(chunks))
    if not answer then
        failed("the API's answer is malformed (" .. problem .. ")")
        return slurm.SUCCESS
    end
    if failing then
        slurm.log_info("predictor: the API answers again")
        failing = false
    end
    local no_limit = job_desc.time_limit == nil or job_desc.time_limit == slurm.NO_VAL
    if answer.time_limit and no_limit and RAISE_MISSING_LIMIT then
        job_desc.time_limit = tonumber(answer.time_limit)
    end
    if answer.time_min then
        job_desc.time_min = tonumber(answer.time_min)
    end
    if answer.mem and RAISE_MISSING_MEMORY and not memory_given(job_desc) then
        job_desc.pn_min_memory = tonumber(answer.mem:sub(1, -2))
    end
    if answer.comment then
        job_desc.comment = answer.comment
    end
    return slurm.SUCCESS
end

function slurm_job_modify(job_desc, job_rec, part_list, modify_uid)
    return slurm.SUCCESS
end
