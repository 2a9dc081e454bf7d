<?xml version="1.0" encoding="utf-8"?>
<!DOCTYPE TS>
<TS version="2.1" language="zh_CN">
<context>
    <name>Badge</name>
    <message>
        <source>waiting</source>
        <extracomment>The progress column&apos;s :class:`ProgressCell`. The row&apos;s record, on any column. A badge&apos;s words, marked for ``lupdate`` (the context &quot;Badge&quot;); see :func:`badge_text`.</extracomment>
        <translation>等待中</translation>
    </message>
    <message>
        <source>queued</source>
        <translation>排队中</translation>
    </message>
    <message>
        <source>running</source>
        <translation>运行中</translation>
    </message>
    <message>
        <source>paused</source>
        <translation>已暂停</translation>
    </message>
    <message>
        <source>done</source>
        <translation>已完成</translation>
    </message>
    <message>
        <source>failed</source>
        <translation>失败</translation>
    </message>
    <message>
        <source>cancelled</source>
        <translation>已取消</translation>
    </message>
    <message>
        <source>skipped</source>
        <translation>已跳过</translation>
    </message>
    <message>
        <source>interrupted</source>
        <translation>已中断</translation>
    </message>
</context>
<context>
    <name>CountdownDialog</name>
    <message>
        <source>Fredica</source>
        <extracomment>Between two updates of the countdown&apos;s text (milliseconds).</extracomment>
        <translation>Fredica</translation>
    </message>
    <message>
        <source>The queue is done</source>
        <translation>队列已完成</translation>
    </message>
    <message>
        <source>Cancel to keep the computer on.</source>
        <translation>点击“取消”可让电脑保持开启。</translation>
    </message>
    <message>
        <source>Cancel</source>
        <translation>取消</translation>
    </message>
    <message>
        <source>Sleep now</source>
        <translation>立即睡眠</translation>
    </message>
    <message>
        <source>Shut down now</source>
        <translation>立即关机</translation>
    </message>
    <message numerus="yes">
        <source>Fredica will put the computer to sleep in %n s.</source>
        <translation>
            <numerusform>Fredica 将在 %n 秒后使电脑进入睡眠。</numerusform>
        </translation>
    </message>
    <message numerus="yes">
        <source>Fredica will shut the computer down in %n s.</source>
        <translation>
            <numerusform>Fredica 将在 %n 秒后关闭电脑。</numerusform>
        </translation>
    </message>
</context>
<context>
    <name>DagView</name>
    <message>
        <source>waiting</source>
        <extracomment>Each badge&apos;s accent: distinct hues, saturated enough to tell apart on white and on black. Below this level of detail (scale), a node is only a coloured box: its text would be unreadably small, and 200 nodes draw faster without it.</extracomment>
        <translation>等待中</translation>
    </message>
    <message>
        <source>queued</source>
        <translation>排队中</translation>
    </message>
    <message>
        <source>running</source>
        <translation>运行中</translation>
    </message>
    <message>
        <source>paused</source>
        <translation>已暂停</translation>
    </message>
    <message>
        <source>done</source>
        <translation>已完成</translation>
    </message>
    <message>
        <source>failed</source>
        <translation>失败</translation>
    </message>
    <message>
        <source>cancelled</source>
        <translation>已取消</translation>
    </message>
    <message>
        <source>skipped</source>
        <translation>已跳过</translation>
    </message>
    <message>
        <source>interrupted</source>
        <translation>已中断</translation>
    </message>
</context>
<context>
    <name>DiskWatch</name>
    <message>
        <source>%1 free on the disk of %2. Tasks that write there fail when it is full.</source>
        <extracomment>The usages of one measure (a list of ``Usage``), after any warning.</extracomment>
        <translation>%2 所在磁盘的可用空间为 %1。磁盘写满后，向其写入的任务将会失败。</translation>
    </message>
    <message>
        <source>The disk is nearly full</source>
        <translation>磁盘空间即将用尽</translation>
    </message>
</context>
<context>
    <name>ErrorHints</name>
    <message>
        <source>Cancelled</source>
        <extracomment>The translation context of every text here. A short name for each error type, for a heading.</extracomment>
        <translation>已取消</translation>
    </message>
    <message>
        <source>A credential is missing</source>
        <translation>缺少凭据</translation>
    </message>
    <message>
        <source>Invalid request</source>
        <translation>请求无效</translation>
    </message>
    <message>
        <source>An earlier step failed</source>
        <translation>前置步骤失败</translation>
    </message>
    <message>
        <source>Unknown kind of task</source>
        <translation>未知的任务类型</translation>
    </message>
    <message>
        <source>Interrupted too often</source>
        <translation>中断次数过多</translation>
    </message>
    <message>
        <source>Its run is gone</source>
        <translation>所属运行已不存在</translation>
    </message>
    <message>
        <source>Stopped responding</source>
        <translation>停止响应</translation>
    </message>
    <message>
        <source>The job failed</source>
        <translation>作业失败</translation>
    </message>
    <message>
        <source>The job crashed</source>
        <translation>作业崩溃</translation>
    </message>
    <message>
        <source>Lost touch with the job server</source>
        <translation>与作业服务器失去联系</translation>
    </message>
    <message>
        <source>The job server stopped</source>
        <translation>任务服务器已停止</translation>
    </message>
    <message>
        <source>Garbled message</source>
        <translation>消息错乱</translation>
    </message>
    <message>
        <source>Network problem</source>
        <translation>网络问题</translation>
    </message>
    <message>
        <source>File access failed</source>
        <translation>文件访问失败</translation>
    </message>
    <message>
        <source>Unsupported media</source>
        <translation>不支持的媒体</translation>
    </message>
    <message>
        <source>Disk full</source>
        <translation>磁盘已满</translation>
    </message>
    <message>
        <source>Input file missing</source>
        <translation>输入文件缺失</translation>
    </message>
    <message>
        <source>Not a media file</source>
        <translation>不是媒体文件</translation>
    </message>
    <message>
        <source>No audio</source>
        <translation>没有音频</translation>
    </message>
    <message>
        <source>Output check failed</source>
        <translation>输出校验失败</translation>
    </message>
    <message>
        <source>Damaged input</source>
        <translation>输入已损坏</translation>
    </message>
    <message>
        <source>FFmpeg failed</source>
        <translation>FFmpeg 处理失败</translation>
    </message>
    <message>
        <source>The server refused</source>
        <translation>服务器拒绝了请求</translation>
    </message>
    <message>
        <source>Speech model not installed</source>
        <translation>语音模型未安装</translation>
    </message>
    <message>
        <source>Unreadable transcript</source>
        <translation>转写文本无法读取</translation>
    </message>
    <message>
        <source>Language model unreachable</source>
        <translation>无法连接语言模型</translation>
    </message>
    <message>
        <source>Language model error</source>
        <translation>语言模型出错</translation>
    </message>
    <message>
        <source>Speech model would not load</source>
        <translation>语音模型无法加载</translation>
    </message>
    <message>
        <source>Out of memory</source>
        <translation>内存不足</translation>
    </message>
    <message>
        <source>Unusable result</source>
        <translation>结果不可用</translation>
    </message>
    <message>
        <source>The task was cancelled, so it did not finish. Retry it if you still want its result.</source>
        <extracomment>What happened and what to do, for each error type.</extracomment>
        <translation>任务已被取消，因此没有完成。如果仍需要它的结果，请重试。</translation>
    </message>
    <message>
        <source>The task needs an API key or password that is not set. Set it as the settings describe, restart Fredica, then retry the task.</source>
        <translation>任务需要的 API 密钥或密码尚未设置。请按设置中的说明进行设置，重启 Fredica，然后重试该任务。</translation>
    </message>
    <message>
        <source>The task was asked to do something it cannot: an option is invalid, or a path is not allowed. Check the message, correct the settings or the input, and submit it again; retrying it unchanged fails the same way.</source>
        <translation>任务收到了它无法执行的要求：某个选项无效，或某个路径不被允许。请查看消息，修正设置或输入后重新提交；不加修改直接重试会以同样的方式失败。</translation>
    </message>
    <message>
        <source>A step this task needs failed, so it never started. Fix and retry the failed step; this task then runs after it.</source>
        <translation>此任务依赖的某个步骤失败了，因此它没有开始。请修复并重试失败的步骤，之后此任务会接着运行。</translation>
    </message>
    <message>
        <source>This version of Fredica does not know how to run this kind of task (it may come from a newer version). Update Fredica, or remove the task.</source>
        <translation>此版本的 Fredica 不知道如何运行这类任务（它可能来自更新的版本）。请更新 Fredica，或移除该任务。</translation>
    </message>
    <message>
        <source>Fredica closed or crashed too many times while this task ran, so it stopped trying. If something keeps stopping Fredica during this task, fix that first; then retry it.</source>
        <translation>此任务运行期间 Fredica 关闭或崩溃的次数过多，因此不再尝试。如果有什么原因总在此任务期间让 Fredica 停止，请先解决它，然后再重试。</translation>
    </message>
    <message>
        <source>The run this task belonged to was removed, so the task was stopped. Nothing needs doing; submit the work again if you still want it.</source>
        <translation>此任务所属的运行已被移除，因此任务已停止。无需任何操作；如果仍需要，请重新提交。</translation>
    </message>
    <message>
        <source>The job stopped reporting progress for too long and was stopped. Fredica retries it on its own; if it keeps stalling, check that the computer is not overloaded and that the input is readable.</source>
        <translation>作业太长时间没有报告进度，已被停止。Fredica 会自动重试；如果它总是卡住，请检查电脑是否负载过高，以及输入是否可以读取。</translation>
    </message>
    <message>
        <source>The job hit an unexpected error, or a tool it needs would not start. Fredica retries it on its own; if it keeps failing, the message and the logs say what went wrong.</source>
        <translation>作业遇到了意外错误，或它需要的某个工具无法启动。Fredica 会自动重试；如果一直失败，请查看消息和日志了解出了什么问题。</translation>
    </message>
    <message>
        <source>The program doing the work exited unexpectedly. Fredica retries it on its own; if it keeps crashing, try another input or check the logs.</source>
        <translation>执行工作的程序意外退出。Fredica 会自动重试；如果一直崩溃，请换一个输入试试，或查看日志。</translation>
    </message>
    <message>
        <source>Fredica lost its connection to the local job server while the task ran. It retries on its own; if this keeps happening, restart Fredica.</source>
        <translation>任务运行期间，Fredica 与本地作业服务器的连接中断。它会自动重试；如果这种情况反复出现，请重启 Fredica。</translation>
    </message>
    <message>
        <source>The local job server stopped while the task ran (it was killed or crashed). That is not the task&apos;s fault: Fredica starts a new server and runs the task again, using none of its retries.</source>
        <translation>任务运行时本机的任务服务器停止了（被终止或崩溃）。这不是任务本身的问题：Fredica 会启动新的服务器并重新运行该任务，不占用它的重试次数。</translation>
    </message>
    <message>
        <source>Fredica and its job server misunderstood each other. It retries on its own; if this keeps happening, reinstall or update Fredica.</source>
        <translation>Fredica 与其作业服务器之间的通信出错。它会自动重试；如果这种情况反复出现，请重新安装或更新 Fredica。</translation>
    </message>
    <message>
        <source>A download or request failed: the connection dropped, timed out, or the server was busy. Fredica retries on its own; check your internet connection if it keeps failing.</source>
        <translation>下载或请求失败：连接中断、超时，或服务器繁忙。Fredica 会自动重试；如果一直失败，请检查网络连接。</translation>
    </message>
    <message>
        <source>A file could not be read or written: a folder may have moved, a drive been disconnected, or permission be missing. Fredica retries on its own; check the folder named in the message.</source>
        <translation>无法读取或写入某个文件：可能是文件夹被移动、驱动器已断开，或缺少权限。Fredica 会自动重试；请检查消息中提到的文件夹。</translation>
    </message>
    <message>
        <source>The input holds nothing this task can use as asked (an unknown codec, no video track, a web page instead of a file). Convert the input, or choose another task.</source>
        <translation>输入中没有此任务能按要求使用的内容（例如未知的编解码器、没有视频轨道，或是网页而不是文件）。请转换输入，或选择其他任务。</translation>
    </message>
    <message>
        <source>The disk is full, or would be too full after this task. Free some space, or choose a library folder on another drive, then retry the task.</source>
        <translation>磁盘已满，或执行此任务后空间将不足。请释放一些空间，或在另一个驱动器上选择媒体库文件夹，然后重试该任务。</translation>
    </message>
    <message>
        <source>An input file is no longer where it was: it was moved, renamed or deleted. Put it back, or add it to the library again, then retry.</source>
        <translation>某个输入文件已不在原来的位置：它被移动、重命名或删除了。请把它放回原处，或重新添加到媒体库，然后重试。</translation>
    </message>
    <message>
        <source>The input is not an audio or video file FFmpeg can read, or it is empty. Check that you chose the right file.</source>
        <translation>输入不是 FFmpeg 能读取的音频或视频文件，或者它是空的。请确认选择了正确的文件。</translation>
    </message>
    <message>
        <source>The input has no sound to work on: no audio track, or only silence. Choose a file with audio.</source>
        <translation>输入中没有可处理的声音：没有音轨，或只有静音。请选择带有音频的文件。</translation>
    </message>
    <message>
        <source>A file was written but failed its check afterwards (incomplete or corrupted). Fredica retries on its own; if it keeps failing, check the disk and the connection.</source>
        <translation>文件已写入，但随后的校验未通过（不完整或已损坏）。Fredica 会自动重试；如果一直失败，请检查磁盘和网络连接。</translation>
    </message>
    <message>
        <source>The input file is damaged and cannot be read to the end. Get a fresh copy of the file, or repair it, then retry.</source>
        <translation>输入文件已损坏，无法完整读取。请重新获取该文件的副本或修复它，然后重试。</translation>
    </message>
    <message>
        <source>FFmpeg could not process the input, for a reason it did not explain. The message holds its last words; try converting the file with another tool first.</source>
        <translation>FFmpeg 无法处理该输入，且没有说明原因。消息中包含它最后的输出；请先尝试用其他工具转换该文件。</translation>
    </message>
    <message>
        <source>The server refused the request (not found, forbidden, or the site blocked it). Check that the address is right and that the file is still available.</source>
        <translation>服务器拒绝了请求（未找到、禁止访问，或被网站拦截）。请检查地址是否正确，以及文件是否仍然可用。</translation>
    </message>
    <message>
        <source>The speech model chosen in the settings is not installed. Let Fredica download it (set a models folder and stay online), or choose tiny.en, which is built in.</source>
        <translation>设置中选择的语音模型尚未安装。可以让 Fredica 下载它（设置模型文件夹并保持联网），或选择内置的 tiny.en。</translation>
    </message>
    <message>
        <source>A transcript file could not be read as one. Transcribe the media again to get a fresh transcript.</source>
        <translation>某个转写文件无法被识别读取。请对该媒体重新进行语音转文字，以获得新的转写文本。</translation>
    </message>
    <message>
        <source>The language model&apos;s server did not answer. Fredica retries on its own; check that the server (a local Ollama, say) is running and that its address in the settings is right.</source>
        <translation>语言模型的服务器没有响应。Fredica 会自动重试；请检查服务器（例如本地的 Ollama）是否正在运行，以及设置中的地址是否正确。</translation>
    </message>
    <message>
        <source>The language model refused the request or gave an answer that could not be read. Fredica retries on its own; if it keeps failing, try another model in the settings.</source>
        <translation>语言模型拒绝了请求，或返回了无法读取的回答。Fredica 会自动重试；如果一直失败，请在设置中换一个模型。</translation>
    </message>
    <message>
        <source>The speech model is installed but could not be loaded: it may be damaged, or too large for this computer. Delete it so that it is downloaded again, or choose a smaller model.</source>
        <translation>语音模型已安装但无法加载：它可能已损坏，或对这台电脑来说太大。请删除它以便重新下载，或选择更小的模型。</translation>
    </message>
    <message>
        <source>The computer ran out of memory during the task. Fredica retries on its own; close other programs, run fewer tasks at once, or choose a smaller model.</source>
        <translation>任务执行期间电脑内存不足。Fredica 会自动重试；请关闭其他程序、减少同时运行的任务数，或选择更小的模型。</translation>
    </message>
    <message>
        <source>The job finished but what it returned could not be saved. This is a bug in Fredica: please report it with the message.</source>
        <translation>作业已完成，但它返回的结果无法保存。这是 Fredica 的缺陷：请附上消息报告此问题。</translation>
    </message>
    <message>
        <source>Failed</source>
        <extracomment>The title of an error type this build does not know.</extracomment>
        <translation>失败</translation>
    </message>
    <message>
        <source>The task failed. The message says why; fix what it names and retry the task.</source>
        <extracomment>The hint for an error type this build does not know.</extracomment>
        <translation>任务失败。消息中说明了原因；请解决其中指出的问题，然后重试该任务。</translation>
    </message>
</context>
<context>
    <name>GuiApp</name>
    <message>
        <source>Fredica is still running</source>
        <extracomment>The interface languages: setting value → what the language selector shows. The compiled translations, beside this module. The window&apos;s remembered state (``window.ini``): the tray&apos;s first-time message was shown. Closing the window while tasks run hides it in the tray (``settings``). What to do when the queue is done: chosen in the window&apos;s menu or the tray&apos;s, for this session.</extracomment>
        <translation>Fredica 仍在运行</translation>
    </message>
    <message>
        <source>Your tasks go on in the background. Click the tray icon to open the window; choose Quit in its menu to stop.</source>
        <translation>你的任务会在后台继续运行。点击托盘图标可打开窗口；在其菜单中选择“退出 Fredica”即可停止。</translation>
    </message>
    <message>
        <source>Watch folder: %1 submitted to %2</source>
        <translation>监视文件夹：已将 %1 提交到 %2</translation>
    </message>
    <message>
        <source>Watch folder</source>
        <translation>监视文件夹</translation>
    </message>
</context>
<context>
    <name>HostsPage</name>
    <message>
        <source>Worker</source>
        <extracomment>What an empty cell shows (an en dash). How often the engines are read again while the page is in view. Whether the page has anything to show (the window shows or hides its entry). The worker id of this window&apos;s own engine (None: it runs none). Whether there is anything to show (a shared queue, or endpoint hosts set). What *Check now* found, kept while no engine of this window knows better.</extracomment>
        <translation>工作进程</translation>
    </message>
    <message>
        <source>Host</source>
        <translation>主机</translation>
    </message>
    <message>
        <source>Heartbeat</source>
        <translation>心跳</translation>
    </message>
    <message>
        <source>Running</source>
        <translation>运行中</translation>
    </message>
    <message>
        <source>Slots</source>
        <translation>槽位</translation>
    </message>
    <message>
        <source>State</source>
        <translation>状态</translation>
    </message>
    <message>
        <source>Version</source>
        <translation>版本</translation>
    </message>
    <message>
        <source>Drain</source>
        <translation>停止接活</translation>
    </message>
    <message>
        <source>Let the selected engine finish what it runs, and take no new task</source>
        <translation>让所选引擎完成正在运行的任务，不再领取新任务</translation>
    </message>
    <message>
        <source>Claim again</source>
        <translation>恢复接活</translation>
    </message>
    <message>
        <source>Endpoint host</source>
        <translation>端点主机</translation>
    </message>
    <message>
        <source>Address</source>
        <translation>地址</translation>
    </message>
    <message>
        <source>Serves</source>
        <translation>服务类别</translation>
    </message>
    <message>
        <source>Shared folders</source>
        <translation>共享文件夹</translation>
    </message>
    <message>
        <source>Check now</source>
        <translation>立即检查</translation>
    </message>
    <message>
        <source>Reach each endpoint host and check its shared folders with a probe file</source>
        <translation>连接每台端点主机，并用探测文件检查其共享文件夹</translation>
    </message>
    <message>
        <source>Engines on the queue</source>
        <translation>队列上的引擎</translation>
    </message>
    <message>
        <source>Endpoint hosts</source>
        <translation>端点主机</translation>
    </message>
    <message>
        <source>A queue shared by several hosts: %1</source>
        <translation>多台主机共享的队列：%1</translation>
    </message>
    <message>
        <source>This computer&apos;s own queue: one engine at a time. Several hosts share a queue on PostgreSQL (see Scaling out in the documentation).</source>
        <translation>本机自己的队列：同一时间只有一个引擎。多台主机可在 PostgreSQL 上共享队列（见文档中的“扩展到多台主机”）。</translation>
    </message>
    <message>
        <source>Checking…</source>
        <translation>正在检查…</translation>
    </message>
    <message>
        <source>stopped</source>
        <translation>已停止</translation>
    </message>
    <message>
        <source>draining</source>
        <translation>停止接活中</translation>
    </message>
    <message>
        <source>taking work</source>
        <translation>接活中</translation>
    </message>
    <message>
        <source>%1 (this window)</source>
        <translation>%1（本窗口）</translation>
    </message>
    <message>
        <source>No engine is running on this queue.</source>
        <translation>此队列上没有正在运行的引擎。</translation>
    </message>
    <message>
        <source>ready</source>
        <translation>就绪</translation>
    </message>
    <message>
        <source>not checked yet</source>
        <translation>尚未检查</translation>
    </message>
    <message>
        <source>None set. The settings&apos; endpoint_hosts send work to another host&apos;s GPU.</source>
        <translation>未设置。设置中的 endpoint_hosts 可把工作发送到另一台主机的 GPU。</translation>
    </message>
    <message>
        <source>%1 s ago</source>
        <translation>%1 秒前</translation>
    </message>
    <message>
        <source>%1 min ago</source>
        <translation>%1 分钟前</translation>
    </message>
    <message>
        <source>%1 h ago</source>
        <translation>%1 小时前</translation>
    </message>
    <message>
        <source>Could not read the hosts: %1</source>
        <translation>无法读取主机：%1</translation>
    </message>
</context>
<context>
    <name>LibraryModel</name>
    <message>
        <source>Title</source>
        <translation>标题</translation>
    </message>
    <message>
        <source>Kind</source>
        <translation>类型</translation>
    </message>
    <message>
        <source>Duration</source>
        <translation>时长</translation>
    </message>
    <message>
        <source>Size</source>
        <translation>大小</translation>
    </message>
    <message>
        <source>Outputs</source>
        <translation>输出</translation>
    </message>
    <message>
        <source>video</source>
        <translation>视频</translation>
    </message>
    <message>
        <source>audio</source>
        <translation>音频</translation>
    </message>
    <message>
        <source>subtitles</source>
        <translation>字幕</translation>
    </message>
    <message>
        <source>other</source>
        <translation>其他</translation>
    </message>
    <message>
        <source>unknown</source>
        <translation>未知</translation>
    </message>
    <message>
        <source>queued</source>
        <translation>排队中</translation>
    </message>
    <message>
        <source>running</source>
        <translation>运行中</translation>
    </message>
    <message>
        <source>paused</source>
        <translation>已暂停</translation>
    </message>
    <message>
        <source>done</source>
        <translation>已完成</translation>
    </message>
    <message>
        <source>failed</source>
        <translation>失败</translation>
    </message>
    <message>
        <source>cancelled</source>
        <translation>已取消</translation>
    </message>
</context>
<context>
    <name>LibraryPage</name>
    <message>
        <source>Drop media files or folders here, or use Add files…</source>
        <extracomment>Materials a run named that the library did not list: read again once for each.</extracomment>
        <translation>将媒体文件或文件夹拖放到这里，或使用“添加文件…”</translation>
    </message>
    <message>
        <source>Add files…</source>
        <extracomment>First looks at new materials (probe, poster frame), one at a time.</extracomment>
        <translation>添加文件…</translation>
    </message>
    <message>
        <source>Add folder…</source>
        <translation>添加文件夹…</translation>
    </message>
    <message>
        <source>Add URLs…</source>
        <translation>添加 URL…</translation>
    </message>
    <message>
        <source>Start template…</source>
        <translation>启动模板…</translation>
    </message>
    <message>
        <source>Open folder</source>
        <translation>打开文件夹</translation>
    </message>
    <message>
        <source>Remove</source>
        <translation>移除</translation>
    </message>
    <message>
        <source>Media files (%1)</source>
        <translation>媒体文件 (%1)</translation>
    </message>
    <message>
        <source>Subtitle files (%1)</source>
        <translation>字幕文件 (%1)</translation>
    </message>
    <message>
        <source>Add media files</source>
        <translation>添加媒体文件</translation>
    </message>
    <message>
        <source>Add a folder of media</source>
        <translation>添加媒体文件夹</translation>
    </message>
    <message numerus="yes">
        <source>Starting %1 on %n material(s)…</source>
        <translation>
            <numerusform>正在对 %n 个素材启动 %1…</numerusform>
        </translation>
    </message>
    <message numerus="yes">
        <source>Removing %n material(s)…</source>
        <translation>
            <numerusform>正在移除 %n 个素材…</numerusform>
        </translation>
    </message>
    <message>
        <source>Nothing to open yet: it has no folder until it is downloaded.</source>
        <translation>暂无可打开的内容：下载完成之前它还没有文件夹。</translation>
    </message>
    <message>
        <source>Could not open %1</source>
        <translation>无法打开 %1</translation>
    </message>
    <message>
        <source>Could not read the library: %1</source>
        <translation>无法读取媒体库：%1</translation>
    </message>
    <message numerus="yes">
        <source>Adding %n item(s)…</source>
        <translation>
            <numerusform>正在添加 %n 项…</numerusform>
        </translation>
    </message>
    <message numerus="yes">
        <source>%n material(s) added</source>
        <translation>
            <numerusform>已添加 %n 个素材</numerusform>
        </translation>
    </message>
    <message numerus="yes">
        <source>%n already in the library</source>
        <translation>
            <numerusform>%n 个已在媒体库中</numerusform>
        </translation>
    </message>
    <message numerus="yes">
        <source>%n file(s) skipped: not media</source>
        <translation>
            <numerusform>已跳过 %n 个文件：不是媒体文件</numerusform>
        </translation>
    </message>
    <message>
        <source>no media in %1</source>
        <translation>%1 中没有媒体文件</translation>
    </message>
    <message>
        <source>Nothing to add</source>
        <translation>没有可添加的内容</translation>
    </message>
    <message>
        <source>%1: no such file or folder</source>
        <translation>%1：文件或文件夹不存在</translation>
    </message>
    <message>
        <source>%1: not a media file</source>
        <translation>%1：不是媒体文件</translation>
    </message>
    <message>
        <source>%1: not a web address (http or https)</source>
        <translation>%1：不是网址（http 或 https）</translation>
    </message>
    <message numerus="yes">
        <source>%n run(s) started</source>
        <translation>
            <numerusform>已启动 %n 个运行</numerusform>
        </translation>
    </message>
    <message numerus="yes">
        <source>%n already running</source>
        <translation>
            <numerusform>%n 个已在运行</numerusform>
        </translation>
    </message>
    <message>
        <source>Removed “%1”</source>
        <translation>已移除“%1”</translation>
    </message>
    <message numerus="yes">
        <source>%n material(s) removed</source>
        <translation>
            <numerusform>已移除 %n 个素材</numerusform>
        </translation>
    </message>
    <message numerus="yes">
        <source>%n output file(s) deleted</source>
        <translation>
            <numerusform>已删除 %n 个输出文件</numerusform>
        </translation>
    </message>
    <message>
        <source>its outputs are kept in %1</source>
        <translation>其输出保留在 %1</translation>
    </message>
    <message numerus="yes">
        <source>%n output folder(s) kept</source>
        <translation>
            <numerusform>保留了 %n 个输出文件夹</numerusform>
        </translation>
    </message>
    <message>
        <source>Fredica is still opening its data; try again shortly</source>
        <translation>Fredica 仍在打开其数据，请稍后再试</translation>
    </message>
    <message>
        <source>Failed: %1</source>
        <translation>失败：%1</translation>
    </message>
</context>
<context>
    <name>MainWindow</name>
    <message>
        <source>Library</source>
        <extracomment>What the window&apos;s snapshot loads: the newest runs and their tasks, up to these many. Between two reads of the queue&apos;s pause flag (another process may change it). The share of the screen&apos;s free area a first window takes, each way. …but not less than this (a small screen: as much of it as there is). The window has closed for good (not for a change of language). Closing it hid it instead: the app goes on in the tray. Whether closing the window should hide it (the app goes on in the tray) rather than quit; the app sets it (a tray, ``close_to_tray``, tasks running). What to do when the queue is done (:meth:`attach_when_done`). Says why nothing new starts while the engine cannot write its database.</extracomment>
        <translation>媒体库</translation>
    </message>
    <message>
        <source>Queue</source>
        <translation>队列</translation>
    </message>
    <message>
        <source>Run details</source>
        <translation>运行详情</translation>
    </message>
    <message>
        <source>Settings</source>
        <translation>设置</translation>
    </message>
    <message>
        <source>Hosts</source>
        <translation>主机</translation>
    </message>
    <message>
        <source>Opening the data directory…</source>
        <translation>正在打开数据目录…</translation>
    </message>
    <message>
        <source>&amp;File</source>
        <translation>文件(&amp;F)</translation>
    </message>
    <message>
        <source>Add &amp;files…</source>
        <translation>添加文件(&amp;F)…</translation>
    </message>
    <message>
        <source>Add a f&amp;older…</source>
        <translation>添加文件夹(&amp;O)…</translation>
    </message>
    <message>
        <source>Add &amp;URLs…</source>
        <translation>添加 URL(&amp;U)…</translation>
    </message>
    <message>
        <source>&amp;Quit</source>
        <translation>退出(&amp;Q)</translation>
    </message>
    <message>
        <source>&amp;View</source>
        <translation>视图(&amp;V)</translation>
    </message>
    <message>
        <source>Processing in this window</source>
        <translation>在此窗口中处理</translation>
    </message>
    <message>
        <source>Attached to the worker already running on this data directory: it processes the queue, this window views and controls it</source>
        <translation>已连接到此数据目录上正在运行的工作进程：由它处理队列，此窗口负责查看和控制</translation>
    </message>
    <message>
        <source>Waiting: %1. Running tasks go on; nothing new starts until then.</source>
        <translation>正在等待：%1。正在运行的任务继续进行；在此之前不会开始新任务。</translation>
    </message>
    <message>
        <source>Fredica could not open its data: %1</source>
        <translation>Fredica 无法打开其数据：%1</translation>
    </message>
    <message>
        <source>Fredica</source>
        <translation>Fredica</translation>
    </message>
    <message numerus="yes">
        <source>%n task(s) running</source>
        <translation>
            <numerusform>%n 个任务正在运行</numerusform>
        </translation>
    </message>
    <message>
        <source>[paused]</source>
        <translation>[已暂停]</translation>
    </message>
    <message>
        <source>Quit Fredica?</source>
        <translation>退出 Fredica？</translation>
    </message>
    <message numerus="yes">
        <source>%n task(s) are running. They will save their progress and continue the next time Fredica starts.</source>
        <translation>
            <numerusform>%n 个任务正在运行。它们会保存进度，并在下次启动 Fredica 时继续。</numerusform>
        </translation>
    </message>
    <message>
        <source>Stopping: running tasks are saving their progress…</source>
        <translation>正在停止：运行中的任务正在保存进度…</translation>
    </message>
</context>
<context>
    <name>MaterialDetails</name>
    <message>
        <source>video</source>
        <translation>视频</translation>
    </message>
    <message>
        <source>audio</source>
        <translation>音频</translation>
    </message>
    <message>
        <source>subtitles</source>
        <translation>字幕</translation>
    </message>
    <message>
        <source>data</source>
        <translation>数据</translation>
    </message>
    <message>
        <source>attachment</source>
        <translation>附件</translation>
    </message>
    <message>
        <source>cover art</source>
        <translation>封面图</translation>
    </message>
    <message>
        <source>text</source>
        <translation>文本</translation>
    </message>
    <message>
        <source>bitmap</source>
        <translation>图像</translation>
    </message>
    <message>
        <source>mono</source>
        <translation>单声道</translation>
    </message>
    <message>
        <source>stereo</source>
        <translation>立体声</translation>
    </message>
    <message>
        <source>%1 channels</source>
        <translation>%1 声道</translation>
    </message>
    <message>
        <source>no sound in it</source>
        <translation>没有声音</translation>
    </message>
    <message>
        <source>queued</source>
        <translation>排队中</translation>
    </message>
    <message>
        <source>running</source>
        <translation>运行中</translation>
    </message>
    <message>
        <source>done</source>
        <translation>已完成</translation>
    </message>
    <message>
        <source>failed</source>
        <translation>失败</translation>
    </message>
    <message>
        <source>cancelled</source>
        <translation>已取消</translation>
    </message>
    <message>
        <source>Select a material to see its streams, chapters and outputs.</source>
        <translation>选择一个素材以查看其流、章节和输出。</translation>
    </message>
    <message>
        <source>Streams</source>
        <translation>流</translation>
    </message>
    <message>
        <source>Chapters</source>
        <translation>章节</translation>
    </message>
    <message>
        <source>Outputs</source>
        <translation>输出</translation>
    </message>
    <message>
        <source>Double-click a file to open its folder.</source>
        <translation>双击文件以打开其所在文件夹。</translation>
    </message>
    <message>
        <source>Open folder</source>
        <translation>打开文件夹</translation>
    </message>
    <message>
        <source>Nothing made from it yet: start a template on it.</source>
        <translation>尚未由它生成任何文件：对它启动一个模板。</translation>
    </message>
    <message numerus="yes">
        <source>%n materials selected.</source>
        <extracomment>What shows a material (hidden, with only :attr:`empty` shown, when there is none).</extracomment>
        <translation>
            <numerusform>已选择 %n 个素材。</numerusform>
        </translation>
    </message>
    <message>
        <source>Not looked at yet.</source>
        <translation>尚未读取。</translation>
    </message>
    <message>
        <source>None found.</source>
        <translation>未找到。</translation>
    </message>
</context>
<context>
    <name>MessageLine</name>
    <message>
        <source>Dismiss</source>
        <extracomment>A burst of reasons to read the library again (an import and the probes that follow it) is one read, this long after the last of them. What the page&apos;s table remembers in the window&apos;s view state. The splitter between the table and the details pane, in the window&apos;s view state. The details pane reads the selected material&apos;s outputs again this long after its runs last changed (a running task reports many times a second).</extracomment>
        <translation>关闭</translation>
    </message>
</context>
<context>
    <name>NoticeWatcher</name>
    <message numerus="yes">
        <source>%n run(s) finished while Fredica was closed</source>
        <extracomment>More runs than this at once are told in one summary. A take waits this long after the last run seen finishing (milliseconds)… …but no longer than this after the first, while runs keep finishing. Between two measures of the free disk space (milliseconds). After telling of a full disk, tasks failing for it are not told again for this long (seconds): a hundred tasks failing at once are one notification. A failed task&apos;s error, as much as a notification shows. The notices of one take, after they were told (a list of ``RunNotice``).</extracomment>
        <translation>
            <numerusform>Fredica 关闭期间有 %n 个运行已结束</numerusform>
        </translation>
    </message>
    <message numerus="yes">
        <source>%n run(s) finished</source>
        <translation>
            <numerusform>%n 个运行已结束</numerusform>
        </translation>
    </message>
    <message numerus="yes">
        <source>%n completed</source>
        <translation>
            <numerusform>%n 个已完成</numerusform>
        </translation>
    </message>
    <message numerus="yes">
        <source>%n failed</source>
        <translation>
            <numerusform>%n 个失败</numerusform>
        </translation>
    </message>
    <message>
        <source>Done: %1</source>
        <translation>已完成：%1</translation>
    </message>
    <message>
        <source>%1: finished.</source>
        <translation>%1：已完成。</translation>
    </message>
    <message>
        <source>The run has finished.</source>
        <translation>运行已完成。</translation>
    </message>
    <message>
        <source>Failed: %1</source>
        <translation>失败：%1</translation>
    </message>
    <message>
        <source>no error was given</source>
        <translation>未提供错误信息</translation>
    </message>
    <message>
        <source>%1 failed: %2</source>
        <translation>%1 失败：%2</translation>
    </message>
    <message>
        <source>The run failed.</source>
        <translation>运行失败。</translation>
    </message>
    <message>
        <source>the disk is full: free some space, then retry</source>
        <translation>磁盘已满：请释放一些空间，然后重试</translation>
    </message>
    <message numerus="yes">
        <source>(and %n more)</source>
        <translation>
            <numerusform>（另有 %n 个）</numerusform>
        </translation>
    </message>
    <message>
        <source>The disk is full</source>
        <translation>磁盘已满</translation>
    </message>
    <message>
        <source>%1. Running tasks go on; nothing new starts until it is fixed.</source>
        <translation>%1。正在运行的任务继续进行；问题解决前不会开始新任务。</translation>
    </message>
    <message>
        <source>Fredica is waiting</source>
        <translation>Fredica 正在等待</translation>
    </message>
    <message numerus="yes">
        <source>%n task(s) were interrupted.</source>
        <translation>
            <numerusform>%n 个任务被中断。</numerusform>
        </translation>
    </message>
    <message>
        <source>Work to review after a restart</source>
        <translation>重启后有待查看的工作</translation>
    </message>
</context>
<context>
    <name>Notifier</name>
    <message>
        <source>Open</source>
        <extracomment>The typed signature of ``Notify`` in the meta-object the calls are made with. Where the local object that declares that signature is registered, for a moment. How long the notification server may take to answer (milliseconds): to be found (it may be started by D-Bus activation) and to take a notification. After this many failed notifications in a row, the server is not asked again. What the record of shown notifications keeps. The desktop entry the notifications say they come from (its name and icon). Exports a class&apos;s slots as members of the notification interface. (usable, why not). (token, the notification&apos;s id). (token, why). (notification id, action key). The notification id. What the server said it can do (``actions``, ``body``, ``persistence``…). A notification about a run was clicked: show that run (its id). A notification about the queue (a summary, the disk, a restart) was clicked. A notification was shown (a :class:`Shown`). ``settings.notifications``: off, nothing is shown but what is essential. Sent to the server (or waiting for it to be found), by token. The server&apos;s ids of what it shows for us → the run (None: the queue). ``off``: no server; ``probing``: looking for one; ``on``: using it.</extracomment>
        <translation>打开</translation>
    </message>
    <message>
        <source>Show</source>
        <translation>显示</translation>
    </message>
    <message>
        <source>Open the queue</source>
        <translation>打开队列</translation>
    </message>
</context>
<context>
    <name>QueueActions</name>
    <message>
        <source>Pause</source>
        <extracomment>One &quot;Open output&quot; opens at most this many folders (not one window per task of hundreds). One line for the user: why an action failed, or what it did (&quot;&quot; clears it). A run&apos;s id: show its details. How a folder is opened (a test replaces it): the desktop&apos;s file manager, no shell.</extracomment>
        <translation>暂停</translation>
    </message>
    <message>
        <source>Resume</source>
        <translation>继续</translation>
    </message>
    <message>
        <source>Cancel</source>
        <translation>取消</translation>
    </message>
    <message>
        <source>Retry</source>
        <translation>重试</translation>
    </message>
    <message>
        <source>Open output</source>
        <translation>打开输出</translation>
    </message>
    <message>
        <source>Copy error</source>
        <translation>复制错误</translation>
    </message>
    <message>
        <source>Details</source>
        <translation>详情</translation>
    </message>
    <message>
        <source>Pause queue after current</source>
        <extracomment>Checked: no new task starts; running ones finish (``fredica pause-queue``).</extracomment>
        <translation>当前任务完成后暂停队列</translation>
    </message>
    <message>
        <source>Start no new task; the running ones finish. Kept until unchecked.</source>
        <translation>不再启动新任务；正在运行的任务会继续完成。取消勾选前一直有效。</translation>
    </message>
    <message>
        <source>Pause the selected tasks</source>
        <translation>暂停所选任务</translation>
    </message>
    <message>
        <source>Pause every unfinished task of the selected runs</source>
        <translation>暂停所选运行中所有未完成的任务</translation>
    </message>
    <message>
        <source>Resume the selected tasks</source>
        <translation>继续所选任务</translation>
    </message>
    <message>
        <source>Resume the held tasks of the selected runs</source>
        <translation>继续所选运行中被暂停的任务</translation>
    </message>
    <message>
        <source>Cancel the selected tasks and what depends on them</source>
        <translation>取消所选任务及依赖它们的任务</translation>
    </message>
    <message>
        <source>Cancel the selected runs</source>
        <translation>取消所选运行</translation>
    </message>
    <message>
        <source>Run the selected failed or cancelled tasks again</source>
        <translation>重新运行所选的失败或已取消的任务</translation>
    </message>
    <message>
        <source>Run the failed and cancelled tasks of the selected runs again</source>
        <translation>重新运行所选运行中失败和已取消的任务</translation>
    </message>
    <message>
        <source>Open the folder of the selected tasks&apos; output</source>
        <translation>打开所选任务的输出文件夹</translation>
    </message>
    <message>
        <source>Select done tasks to open their output</source>
        <translation>选择已完成的任务以打开其输出</translation>
    </message>
    <message>
        <source>Copy the selected tasks&apos; errors</source>
        <translation>复制所选任务的错误</translation>
    </message>
    <message>
        <source>Select failed tasks to copy their errors</source>
        <translation>选择失败的任务以复制其错误</translation>
    </message>
    <message>
        <source>Show the run of the selected task</source>
        <translation>显示所选任务所属的运行</translation>
    </message>
    <message>
        <source>Show the selected run</source>
        <translation>显示所选运行</translation>
    </message>
    <message>
        <source>Could not pause %1: %2</source>
        <translation>无法暂停 %1：%2</translation>
    </message>
    <message>
        <source>Could not resume %1: %2</source>
        <translation>无法继续 %1：%2</translation>
    </message>
    <message>
        <source>Could not cancel %1: %2</source>
        <translation>无法取消 %1：%2</translation>
    </message>
    <message>
        <source>Could not retry %1: %2</source>
        <translation>无法重试 %1：%2</translation>
    </message>
    <message>
        <source>This task cannot pause now: its job cannot stop safely here</source>
        <extracomment>The context menu&apos;s entries, None for a separator.</extracomment>
        <translation>此任务现在无法暂停：其作业在当前阶段无法安全停止</translation>
    </message>
    <message>
        <source>None of these tasks can pause now: their jobs cannot stop safely here</source>
        <translation>这些任务现在都无法暂停：它们的作业在当前阶段无法安全停止</translation>
    </message>
    <message numerus="yes">
        <source>(and %n more)</source>
        <translation>
            <numerusform>（另有 %n 个）</numerusform>
        </translation>
    </message>
    <message>
        <source>Could not open the folder %1</source>
        <translation>无法打开文件夹 %1</translation>
    </message>
    <message numerus="yes">
        <source>Opened the first %n folder(s)</source>
        <translation>
            <numerusform>已打开前 %n 个文件夹</numerusform>
        </translation>
    </message>
    <message numerus="yes">
        <source>Copied the error of %n task(s)</source>
        <translation>
            <numerusform>已复制 %n 个任务的错误</numerusform>
        </translation>
    </message>
    <message>
        <source>Fredica is still opening its data: try again in a moment</source>
        <translation>Fredica 仍在打开其数据：请稍后再试</translation>
    </message>
    <message>
        <source>Fredica cannot do that now: %1</source>
        <translation>Fredica 现在无法执行此操作：%1</translation>
    </message>
    <message>
        <source>That did not work: %1</source>
        <translation>操作未成功：%1</translation>
    </message>
</context>
<context>
    <name>QueuePage</name>
    <message>
        <source>Search: file, task, type or run</source>
        <extracomment>The search filters this long after the last key (a keystroke does not refilter 10,000 rows). After a batch, the actions follow the selection&apos;s new records this much later (once per burst of batches). How long a line stays shown. The runs&apos; notes are read this long after a change (once per burst of changes). The columns&apos; first widths, before the user&apos;s own are restored. The columns&apos; first widths, before the user&apos;s own are restored: the widest of these samples of their content (and of the header), a column of bars as wide as given; ``None``: the column that takes the room left (the file&apos;s name). What the samples fit: the workflows&apos; names, the states, the longest times. A column of text is never made wider than this at first (its cells are elided). A run&apos;s id: show its details. The last line shown (errors and notes), for tests and for the page&apos;s own label.</extracomment>
        <translation>搜索：文件、任务、类型或运行</translation>
    </message>
    <message>
        <source>(removed from the library)</source>
        <translation>（已从媒体库移除）</translation>
    </message>
</context>
<context>
    <name>RemoveDialog</name>
    <message>
        <source>Remove from the library</source>
        <translation>从媒体库移除</translation>
    </message>
    <message>
        <source>Remove “%1” from the library?</source>
        <translation>要从媒体库移除“%1”吗？</translation>
    </message>
    <message numerus="yes">
        <source>Remove %n material(s) from the library?</source>
        <translation>
            <numerusform>要从媒体库移除 %n 个素材吗？</numerusform>
        </translation>
    </message>
    <message>
        <source>Its finished runs go with it. Your own media file is never deleted.</source>
        <translation>它已完成的运行会一并移除。你自己的媒体文件不会被删除。</translation>
    </message>
    <message>
        <source>Also delete its outputs</source>
        <translation>同时删除其输出</translation>
    </message>
    <message>
        <source>Their finished runs go with them. Your own media files are never deleted.</source>
        <translation>它们已完成的运行会一并移除。你自己的媒体文件不会被删除。</translation>
    </message>
    <message>
        <source>Also delete their outputs</source>
        <translation>同时删除它们的输出</translation>
    </message>
    <message>
        <source>The files Fredica made, in the material&apos;s folder under the library folder.</source>
        <translation>Fredica 生成的文件，位于媒体库文件夹下该素材的文件夹中。</translation>
    </message>
    <message>
        <source>Remove</source>
        <translation>移除</translation>
    </message>
</context>
<context>
    <name>RestartBanner</name>
    <message>
        <source>Review…</source>
        <extracomment>Between two reads of the restart log while the banner shows (milliseconds). The entries the review list shows at most (the counts cover them all). The rows the review list shows without scrolling. How recovery&apos;s actions are listed in the message, in this order. The restart log&apos;s detail of a task a graceful stop interrupted (``workers.store``&apos;s recovery writes it): no crash happened. The bar&apos;s colours on a light palette and on a dark one: amber, with text that reads on it. The first :data:`MAX_ROWS` entries&apos; tasks by id (None: deleted since). The pending entries were read again (a :class:`Pending`).</extracomment>
        <translation>查看…</translation>
    </message>
    <message>
        <source>Retry all</source>
        <translation>全部重试</translation>
    </message>
    <message>
        <source>Dismiss all</source>
        <translation>全部忽略</translation>
    </message>
    <message>
        <source>Task</source>
        <translation>任务</translation>
    </message>
    <message>
        <source>Run</source>
        <translation>运行</translation>
    </message>
    <message>
        <source>When Fredica stopped</source>
        <translation>Fredica 停止时</translation>
    </message>
    <message>
        <source>Recovery</source>
        <translation>恢复操作</translation>
    </message>
    <message>
        <source>Now</source>
        <translation>当前</translation>
    </message>
    <message>
        <source>the application is not open</source>
        <translation>应用尚未打开</translation>
    </message>
    <message>
        <source>Could not do it: %1</source>
        <translation>无法执行：%1</translation>
    </message>
    <message numerus="yes">
        <source>Fredica stopped unexpectedly: %n task(s) were interrupted</source>
        <translation>
            <numerusform>Fredica 意外停止：%n 个任务被中断</numerusform>
        </translation>
    </message>
    <message numerus="yes">
        <source>Fredica was closed while %n task(s) ran</source>
        <translation>
            <numerusform>Fredica 在 %n 个任务运行时被关闭</numerusform>
        </translation>
    </message>
    <message numerus="yes">
        <source>%n resumed</source>
        <translation>
            <numerusform>%n 个已继续</numerusform>
        </translation>
    </message>
    <message numerus="yes">
        <source>%n restarted from the start</source>
        <translation>
            <numerusform>%n 个从头重新开始</numerusform>
        </translation>
    </message>
    <message numerus="yes">
        <source>%n requeued</source>
        <translation>
            <numerusform>%n 个已重新排队</numerusform>
        </translation>
    </message>
    <message numerus="yes">
        <source>%n held for review</source>
        <translation>
            <numerusform>%n 个已搁置待查看</numerusform>
        </translation>
    </message>
    <message numerus="yes">
        <source>%n kept paused</source>
        <translation>
            <numerusform>%n 个保持暂停</numerusform>
        </translation>
    </message>
    <message numerus="yes">
        <source>%n failed</source>
        <translation>
            <numerusform>%n 个失败</numerusform>
        </translation>
    </message>
    <message>
        <source>resumed from its checkpoint</source>
        <translation>从检查点继续</translation>
    </message>
    <message>
        <source>restarted from the start</source>
        <translation>从头重新开始</translation>
    </message>
    <message>
        <source>requeued</source>
        <translation>已重新排队</translation>
    </message>
    <message>
        <source>held for review</source>
        <translation>已搁置待查看</translation>
    </message>
    <message>
        <source>kept paused</source>
        <translation>保持暂停</translation>
    </message>
    <message>
        <source>failed</source>
        <translation>失败</translation>
    </message>
    <message>
        <source>charged %1 of %2</source>
        <translation>已计入 %1 / %2 次</translation>
    </message>
    <message>
        <source>not charged</source>
        <translation>未计入</translation>
    </message>
    <message>
        <source>deleted</source>
        <translation>已删除</translation>
    </message>
    <message>
        <source>held</source>
        <translation>已搁置</translation>
    </message>
    <message>
        <source>queued</source>
        <translation>排队中</translation>
    </message>
    <message>
        <source>starting</source>
        <translation>启动中</translation>
    </message>
    <message>
        <source>running</source>
        <translation>运行中</translation>
    </message>
    <message>
        <source>completed</source>
        <translation>已完成</translation>
    </message>
    <message>
        <source>cancelled</source>
        <translation>已取消</translation>
    </message>
    <message>
        <source>%1 at %2 %</source>
        <translation>%1，进度 %2%</translation>
    </message>
    <message numerus="yes">
        <source>… and %n more (`fredica restart-log` lists them all)</source>
        <translation>
            <numerusform>… 另有 %n 个（`fredica restart-log` 可列出全部）</numerusform>
        </translation>
    </message>
    <message>
        <source>Retry</source>
        <translation>重试</translation>
    </message>
    <message>
        <source>Run it again</source>
        <translation>重新运行</translation>
    </message>
    <message>
        <source>Resume it</source>
        <translation>继续运行</translation>
    </message>
    <message>
        <source>Nothing to retry: it is queued, running or finished</source>
        <translation>无需重试：它正在排队、正在运行或已结束</translation>
    </message>
    <message>
        <source>Dismiss</source>
        <translation>忽略</translation>
    </message>
</context>
<context>
    <name>RunDetailsPage</name>
    <message>
        <source>No run</source>
        <extracomment>The name the splitter between the graph and the task panel is kept under. The first fit of a run&apos;s graph does not go smaller than this: a node&apos;s text stays readable (the user can still zoom out, or fit everything). Back to the queue. Set while the run is being read; its changes wait here meanwhile. The title of the material the run is about (its file&apos;s name), when it has one.</extracomment>
        <translation>无运行</translation>
    </message>
    <message>
        <source>Back to the queue</source>
        <translation>返回队列</translation>
    </message>
    <message>
        <source>Speakers…</source>
        <translation>说话人…</translation>
    </message>
    <message>
        <source>Name the speakers this run found, merge two who are one person</source>
        <translation>为本次运行找到的说话人命名，或将同一人的两个说话人合并</translation>
    </message>
    <message>
        <source>Fit to view</source>
        <translation>适应视图</translation>
    </message>
    <message>
        <source>Show the whole graph (Ctrl+0); Ctrl+wheel zooms</source>
        <translation>显示整个图 (Ctrl+0)；Ctrl+滚轮缩放</translation>
    </message>
    <message>
        <source>Open a run from the queue to see its tasks here.</source>
        <translation>从队列中打开一个运行，即可在此查看其任务。</translation>
    </message>
    <message>
        <source>Run</source>
        <translation>运行</translation>
    </message>
    <message>
        <source>Loading…</source>
        <translation>正在加载…</translation>
    </message>
    <message>
        <source>Could not read this run: %1</source>
        <translation>无法读取此运行：%1</translation>
    </message>
    <message>
        <source>Run %1</source>
        <translation>运行 %1</translation>
    </message>
    <message>
        <source>pending</source>
        <translation>待处理</translation>
    </message>
    <message>
        <source>running</source>
        <translation>运行中</translation>
    </message>
    <message>
        <source>completed</source>
        <translation>已完成</translation>
    </message>
    <message>
        <source>failed</source>
        <translation>失败</translation>
    </message>
    <message>
        <source>cancelled</source>
        <translation>已取消</translation>
    </message>
    <message>
        <source>removed</source>
        <translation>已移除</translation>
    </message>
    <message>
        <source>created %1</source>
        <translation>创建于 %1</translation>
    </message>
    <message>
        <source>%1 of %2 tasks done</source>
        <translation>已完成 %1/%2 个任务</translation>
    </message>
</context>
<context>
    <name>RunStatus</name>
    <message>
        <source>pending</source>
        <translation>待处理</translation>
    </message>
    <message>
        <source>running</source>
        <translation>运行中</translation>
    </message>
    <message>
        <source>completed</source>
        <translation>已完成</translation>
    </message>
    <message>
        <source>failed</source>
        <translation>失败</translation>
    </message>
    <message>
        <source>cancelled</source>
        <translation>已取消</translation>
    </message>
</context>
<context>
    <name>RunTableModel</name>
    <message>
        <source>File</source>
        <translation>文件</translation>
    </message>
    <message>
        <source>Workflow</source>
        <translation>工作流</translation>
    </message>
    <message>
        <source>State</source>
        <translation>状态</translation>
    </message>
    <message>
        <source>Progress</source>
        <translation>进度</translation>
    </message>
    <message>
        <source>Tasks</source>
        <translation>任务</translation>
    </message>
    <message>
        <source>Created</source>
        <translation>创建时间</translation>
    </message>
    <message>
        <source>run %1</source>
        <translation>运行 %1</translation>
    </message>
    <message>
        <source>%n task(s) left a note: see its tasks</source>
        <translation>%n 个任务留下了提示：请查看其任务</translation>
    </message>
    <message>
        <source>no tasks</source>
        <translation>没有任务</translation>
    </message>
    <message>
        <source>%n running</source>
        <translation>%n 个运行中</translation>
    </message>
    <message>
        <source>%n pending</source>
        <translation>%n 个待处理</translation>
    </message>
    <message>
        <source>%n failed</source>
        <translation>%n 个失败</translation>
    </message>
    <message>
        <source>%n cancelled</source>
        <translation>%n 个已取消</translation>
    </message>
    <message>
        <source>all done</source>
        <translation>全部完成</translation>
    </message>
</context>
<context>
    <name>SettingsForm</name>
    <message>
        <source>Speech model</source>
        <extracomment>What tells a widget that the colours changed (the theme switched between light and dark). The templates a watch folder may submit its files to: those that take a media file. The watch folders table&apos;s columns. The red line under each field, by setting (``slots.cpu`` for a slot). What each setting is called on the form (for saying what a save changed). The speech models installed, as last listed (:meth:`set_models`).</extracomment>
        <translation>语音模型</translation>
    </message>
    <message>
        <source>Language model</source>
        <translation>语言模型</translation>
    </message>
    <message>
        <source>Library</source>
        <translation>媒体库</translation>
    </message>
    <message>
        <source>Browse…</source>
        <translation>浏览…</translation>
    </message>
    <message>
        <source>Library folder:</source>
        <translation>媒体库文件夹：</translation>
    </message>
    <message>
        <source>Concurrency</source>
        <translation>并发</translation>
    </message>
    <message>
        <source>Tasks at once:</source>
        <translation>同时运行的任务数：</translation>
    </message>
    <message>
        <source>CPU</source>
        <translation>CPU</translation>
    </message>
    <message>
        <source>GPU</source>
        <translation>GPU</translation>
    </message>
    <message>
        <source>Network</source>
        <translation>网络</translation>
    </message>
    <message>
        <source>Disk</source>
        <translation>磁盘</translation>
    </message>
    <message>
        <source>default: %1</source>
        <translation>默认：%1</translation>
    </message>
    <message>
        <source>Slots per resource:</source>
        <translation>每种资源的槽位数：</translation>
    </message>
    <message>
        <source>Slots per resource</source>
        <translation>每种资源的槽位数</translation>
    </message>
    <message>
        <source>ffmpeg</source>
        <translation>ffmpeg</translation>
    </message>
    <message>
        <source>The bundled ffmpeg</source>
        <translation>内置的 ffmpeg</translation>
    </message>
    <message>
        <source>Detect</source>
        <translation>检测</translation>
    </message>
    <message>
        <source>ffmpeg:</source>
        <translation>ffmpeg：</translation>
    </message>
    <message>
        <source>Speech to text</source>
        <translation>语音转文字</translation>
    </message>
    <message>
        <source>Download</source>
        <translation>下载</translation>
    </message>
    <message>
        <source>Model:</source>
        <translation>模型：</translation>
    </message>
    <message>
        <source>Automatic</source>
        <translation>自动</translation>
    </message>
    <message>
        <source>CUDA (NVIDIA GPU)</source>
        <translation>CUDA（NVIDIA GPU）</translation>
    </message>
    <message>
        <source>Device:</source>
        <translation>设备：</translation>
    </message>
    <message>
        <source>Compute type:</source>
        <translation>计算类型：</translation>
    </message>
    <message>
        <source>auto: detected</source>
        <translation>auto：自动检测</translation>
    </message>
    <message>
        <source>auto, or a language code such as en, zh or pt-BR</source>
        <translation>auto，或语言代码，如 en、zh 或 pt-BR</translation>
    </message>
    <message>
        <source>Spoken language:</source>
        <translation>音频语言：</translation>
    </message>
    <message>
        <source>Burned-in subtitles</source>
        <translation>烧录字幕</translation>
    </message>
    <message>
        <source>A font family your system has (letters, digits, spaces, . _ -)</source>
        <translation>系统中已有的字体名称（字母、数字、空格、. _ -）</translation>
    </message>
    <message>
        <source>Font:</source>
        <translation>字体：</translation>
    </message>
    <message>
        <source>In the player&apos;s units: the picture is 288 high</source>
        <translation>以播放器单位计：画面高 288</translation>
    </message>
    <message>
        <source>Size:</source>
        <translation>字号：</translation>
    </message>
    <message>
        <source>Outline:</source>
        <translation>描边：</translation>
    </message>
    <message>
        <source>Bottom</source>
        <translation>底部</translation>
    </message>
    <message>
        <source>Top</source>
        <translation>顶部</translation>
    </message>
    <message>
        <source>Position:</source>
        <translation>位置：</translation>
    </message>
    <message>
        <source>Language model (optional)</source>
        <translation>语言模型（可选）</translation>
    </message>
    <message>
        <source>Endpoint URL:</source>
        <translation>接口 URL：</translation>
    </message>
    <message>
        <source>e.g. llama3.1</source>
        <translation>例如 llama3.1</translation>
    </message>
    <message>
        <source>e.g. OPENAI_API_KEY (a variable&apos;s name, never the key)</source>
        <translation>例如 OPENAI_API_KEY（填写变量名，切勿填写密钥本身）</translation>
    </message>
    <message>
        <source>API key variable:</source>
        <translation>API 密钥变量：</translation>
    </message>
    <message>
        <source>none, e.g. http://proxy:3128</source>
        <translation>无，例如 http://proxy:3128</translation>
    </message>
    <message>
        <source>Proxy:</source>
        <translation>代理：</translation>
    </message>
    <message>
        <source>Interface</source>
        <translation>界面</translation>
    </message>
    <message>
        <source>System</source>
        <translation>跟随系统</translation>
    </message>
    <message>
        <source>Language:</source>
        <translation>语言：</translation>
    </message>
    <message>
        <source>Light</source>
        <translation>浅色</translation>
    </message>
    <message>
        <source>Dark</source>
        <translation>深色</translation>
    </message>
    <message>
        <source>Colours:</source>
        <translation>配色：</translation>
    </message>
    <message>
        <source>Desktop</source>
        <translation>桌面</translation>
    </message>
    <message>
        <source>Close to tray:</source>
        <translation>关闭到托盘：</translation>
    </message>
    <message>
        <source>Keep running in the tray when the window is closed while tasks run</source>
        <translation>有任务运行时关闭窗口，则在托盘中继续运行</translation>
    </message>
    <message>
        <source>Notifications:</source>
        <translation>通知：</translation>
    </message>
    <message>
        <source>Say when a run completes or fails, and when the disk is nearly full</source>
        <translation>在运行完成或失败、磁盘空间即将用尽时发出通知</translation>
    </message>
    <message>
        <source>Keep awake:</source>
        <translation>保持唤醒：</translation>
    </message>
    <message>
        <source>Keep the computer from sleeping while tasks run</source>
        <translation>有任务运行时阻止电脑进入睡眠</translation>
    </message>
    <message>
        <source>Start at login:</source>
        <translation>登录时启动：</translation>
    </message>
    <message>
        <source>Start Fredica in the tray when I log in</source>
        <translation>登录时在托盘中启动 Fredica</translation>
    </message>
    <message>
        <source>Watch folders</source>
        <translation>监视文件夹</translation>
    </message>
    <message>
        <source>New media files in these folders are added to the library and run through the folder&apos;s template once, when they have stopped changing.</source>
        <translation>这些文件夹中的新媒体文件在停止变化后，会被添加到媒体库，并用该文件夹的模板运行一次。</translation>
    </message>
    <message>
        <source>Folder</source>
        <translation>文件夹</translation>
    </message>
    <message>
        <source>Template</source>
        <translation>模板</translation>
    </message>
    <message>
        <source>Subfolders</source>
        <translation>子文件夹</translation>
    </message>
    <message>
        <source>Patterns</source>
        <translation>匹配模式</translation>
    </message>
    <message>
        <source>Parameters</source>
        <translation>参数</translation>
    </message>
    <message>
        <source>The template&apos;s parameters for each file, comma-separated (e.g. profile=archive); none: as in the settings</source>
        <translation>每个文件使用的模板参数，以逗号分隔（例如 profile=archive）；留空：按设置</translation>
    </message>
    <message>
        <source>Which files, comma-separated (e.g. *.mkv, *.mp4); none: every media file</source>
        <translation>要包含的文件，以逗号分隔（例如 *.mkv, *.mp4）；留空：所有媒体文件</translation>
    </message>
    <message>
        <source>Add…</source>
        <translation>添加…</translation>
    </message>
    <message>
        <source>Remove</source>
        <translation>移除</translation>
    </message>
    <message>
        <source>Folders:</source>
        <translation>文件夹：</translation>
    </message>
    <message>
        <source> s</source>
        <translation> 秒</translation>
    </message>
    <message>
        <source>How long a file must stay unchanged before it is taken in</source>
        <translation>文件须保持不变多长时间后才会被收入</translation>
    </message>
    <message>
        <source>Settle time:</source>
        <translation>稳定等待时间：</translation>
    </message>
    <message>
        <source>Also the files in its subfolders</source>
        <translation>同时包含其子文件夹中的文件</translation>
    </message>
    <message>
        <source>Default: %1</source>
        <translation>默认：%1</translation>
    </message>
    <message>
        <source>Installed</source>
        <translation>已安装</translation>
    </message>
    <message>
        <source>Not installed: downloaded when first needed</source>
        <translation>未安装：首次需要时下载</translation>
    </message>
    <message>
        <source>Folder %1: choose a folder</source>
        <translation>第 %1 个文件夹：请选择一个文件夹</translation>
    </message>
    <message>
        <source>Folder %1: give a full path (or choose it with Add…)</source>
        <translation>第 %1 个文件夹：请填写完整路径（或通过“添加…”选择）</translation>
    </message>
    <message>
        <source>Folder %1: %2 does not take a media file; choose another template</source>
        <translation>第 %1 个文件夹：%2 不接受媒体文件；请选择其他模板</translation>
    </message>
    <message>
        <source>Folder %1: write each parameter as name=value (e.g. %2)</source>
        <translation>文件夹 %1：每个参数请写成 名称=值（例如 %2）</translation>
    </message>
    <message>
        <source>Folder %1: %2</source>
        <translation>文件夹 %1：%2</translation>
    </message>
    <message>
        <source>Give a full path (or choose it with Browse…)</source>
        <translation>请填写完整路径（或通过“浏览…”选择）</translation>
    </message>
    <message>
        <source>A whole number, 1 or more</source>
        <translation>大于或等于 1 的整数</translation>
    </message>
</context>
<context>
    <name>SettingsPage</name>
    <message>
        <source>Revert</source>
        <extracomment>Between two looks at a model download&apos;s task (milliseconds). The interface language was changed and saved (``en``, ``zh_CN``, ``auto``). The colour scheme was changed and saved (``auto``, ``light``, ``dark``). The settings file was read into the form (a :class:`settings_work.Loaded`). A save has finished, written or refused (a :class:`settings_work.Saved`). &quot;Detect&quot; has found what it could (a :class:`settings_work.FfmpegFound`).</extracomment>
        <translation>还原</translation>
    </message>
    <message>
        <source>Save</source>
        <translation>保存</translation>
    </message>
    <message>
        <source>the application is not open yet</source>
        <translation>应用尚未打开</translation>
    </message>
    <message>
        <source>Something went wrong: %1</source>
        <translation>出错了：%1</translation>
    </message>
    <message>
        <source>Settings file: %1</source>
        <translation>设置文件：%1</translation>
    </message>
    <message>
        <source>Checking…</source>
        <translation>正在检查…</translation>
    </message>
    <message>
        <source>Saving…</source>
        <translation>正在保存…</translation>
    </message>
    <message>
        <source>Nothing was saved: correct what is marked in red.</source>
        <translation>未保存任何内容：请更正标红的项。</translation>
    </message>
    <message>
        <source>Write auto, or a language code such as en, zh or pt-BR</source>
        <translation>请填写 auto，或语言代码，如 en、zh 或 pt-BR</translation>
    </message>
    <message>
        <source>The name of an environment variable: capital letters, digits and _ (e.g. OPENAI_API_KEY)</source>
        <translation>环境变量名：只能包含大写字母、数字和 _（例如 OPENAI_API_KEY）</translation>
    </message>
    <message>
        <source>Choose a model, or give the path of a model folder</source>
        <translation>请选择一个模型，或填写模型文件夹的路径</translation>
    </message>
    <message>
        <source>Folder %1: %2</source>
        <translation>第 %1 个文件夹：%2</translation>
    </message>
    <message>
        <source>At least %1</source>
        <translation>至少为 %1</translation>
    </message>
    <message>
        <source>At most %1</source>
        <translation>最多为 %1</translation>
    </message>
    <message>
        <source>Saved (nothing had changed).</source>
        <translation>已保存（没有任何更改）。</translation>
    </message>
    <message>
        <source>Saved.</source>
        <translation>已保存。</translation>
    </message>
    <message>
        <source>In force now: %1.</source>
        <translation>已立即生效：%1。</translation>
    </message>
    <message>
        <source>In force now, for new work: %1.</source>
        <translation>已立即生效（用于新的工作）：%1。</translation>
    </message>
    <message>
        <source>Applies when the worker that runs the queue starts again: %1.</source>
        <translation>在运行队列的工作进程重新启动后生效：%1。</translation>
    </message>
    <message>
        <source>Applies the next time Fredica starts: %1.</source>
        <translation>下次启动 Fredica 时生效：%1。</translation>
    </message>
    <message>
        <source>Library folder</source>
        <translation>媒体库文件夹</translation>
    </message>
    <message>
        <source>Watch a folder</source>
        <translation>选择要监视的文件夹</translation>
    </message>
    <message>
        <source>ffmpeg</source>
        <translation>ffmpeg</translation>
    </message>
    <message>
        <source>Looking at ffmpeg…</source>
        <translation>正在检测 ffmpeg…</translation>
    </message>
    <message>
        <source>Could not look: %1</source>
        <translation>无法检测：%1</translation>
    </message>
    <message>
        <source>the bundled ffmpeg</source>
        <translation>内置的 ffmpeg</translation>
    </message>
    <message>
        <source>Cannot use %1: %2</source>
        <translation>无法使用 %1：%2</translation>
    </message>
    <message>
        <source>bundled</source>
        <translation>内置</translation>
    </message>
    <message>
        <source>from the settings</source>
        <translation>来自设置</translation>
    </message>
    <message>
        <source>ffmpeg %1 (%2): %3</source>
        <translation>ffmpeg %1（%2）：%3</translation>
    </message>
    <message>
        <source>Hardware encoders it was built with:</source>
        <translation>编译时包含的硬件编码器：</translation>
    </message>
    <message>
        <source>No hardware encoders: video is encoded on the CPU.</source>
        <translation>没有硬件编码器：视频将由 CPU 编码。</translation>
    </message>
    <message>
        <source>Working on this computer for H.264: %1.</source>
        <translation>在这台电脑上可用于 H.264 的：%1。</translation>
    </message>
    <message>
        <source>None works on this computer for H.264: libx264 on the CPU is used.</source>
        <translation>这台电脑上没有可用于 H.264 的硬件编码器：将在 CPU 上使用 libx264。</translation>
    </message>
    <message>
        <source>Installed.</source>
        <translation>已安装。</translation>
    </message>
    <message>
        <source>The path of a model folder.</source>
        <translation>模型文件夹的路径。</translation>
    </message>
    <message>
        <source>Not installed: downloaded the first time a transcription needs it, or now.</source>
        <translation>未安装：将在首次语音转文字需要时下载，也可以现在下载。</translation>
    </message>
    <message>
        <source>Not a model Fredica can download: install it into %1 yourself, or give the path of a model folder.</source>
        <translation>Fredica 无法下载此模型：请自行将其安装到 %1，或填写模型文件夹的路径。</translation>
    </message>
    <message>
        <source>Download it into %1 now, through the queue</source>
        <translation>现在通过队列将其下载到 %1</translation>
    </message>
    <message>
        <source>Only a model that is not installed and that Fredica knows</source>
        <translation>仅适用于尚未安装且 Fredica 支持的模型</translation>
    </message>
    <message>
        <source>Queueing the download of %1…</source>
        <translation>正在将 %1 的下载加入队列…</translation>
    </message>
    <message>
        <source>Could not queue the download: %1</source>
        <translation>无法将下载加入队列：%1</translation>
    </message>
    <message>
        <source>waiting in the queue</source>
        <translation>在队列中等待</translation>
    </message>
    <message>
        <source>downloading</source>
        <translation>正在下载</translation>
    </message>
    <message>
        <source>The download of %1 did not finish: %2</source>
        <translation>%1 的下载未完成：%2</translation>
    </message>
</context>
<context>
    <name>SpeakersDialog</name>
    <message>
        <source>Speakers</source>
        <translation>说话人</translation>
    </message>
    <message>
        <source>Reading the speakers…</source>
        <translation>正在读取说话人…</translation>
    </message>
    <message>
        <source>Speaker</source>
        <translation>说话人</translation>
    </message>
    <message>
        <source>Speech</source>
        <translation>发言时长</translation>
    </message>
    <message>
        <source>Turns</source>
        <translation>发言次数</translation>
    </message>
    <message>
        <source>Name</source>
        <translation>名字</translation>
    </message>
    <message>
        <source>Same person as</source>
        <translation>与谁是同一人</translation>
    </message>
    <message>
        <source>The subtitles and transcripts of this run are written again with these names. A speaker who is the same person as another is merged into them.</source>
        <translation>本次运行的字幕和文字稿将用这些名字重新写出。与另一人是同一人的说话人会并入其中。</translation>
    </message>
    <message numerus="yes">
        <source>%n speaker(s) found in this run.</source>
        <translation>
            <numerusform>本次运行找到 %n 位说话人。</numerusform>
        </translation>
    </message>
    <message>
        <source>Speaker %1</source>
        <translation>说话人 %1</translation>
    </message>
    <message>
        <source>Name of speaker %1</source>
        <translation>说话人 %1 的名字</translation>
    </message>
    <message>
        <source>nobody else</source>
        <translation>不与他人相同</translation>
    </message>
    <message>
        <source>Speaker %1 is the same person as</source>
        <translation>说话人 %1 与谁是同一人</translation>
    </message>
    <message>
        <source>The speakers could not be read.</source>
        <translation>无法读取说话人。</translation>
    </message>
    <message>
        <source>Nothing to save: type a name, or choose a person.</source>
        <translation>没有要保存的内容：请输入名字，或选择一个人。</translation>
    </message>
    <message>
        <source>Writing the subtitles and transcripts again…</source>
        <translation>正在重新写出字幕和文字稿…</translation>
    </message>
    <message numerus="yes">
        <source>Saved: %n file(s) written again.</source>
        <translation>
            <numerusform>已保存：重新写出了 %n 个文件。</numerusform>
        </translation>
    </message>
    <message numerus="yes">
        <source>%n speaker(s).</source>
        <translation>
            <numerusform>%n 位说话人。</numerusform>
        </translation>
    </message>
</context>
<context>
    <name>StateSidebar</name>
    <message>
        <source>All tasks</source>
        <extracomment>A dot per state, so that a state reads at a glance; interrupted (needs the user after a restart) is orange, apart from failed&apos;s red, as in the table&apos;s State column. The badge to show (None: all tasks).</extracomment>
        <translation>全部任务</translation>
    </message>
    <message>
        <source>Waiting</source>
        <translation>等待中</translation>
    </message>
    <message>
        <source>Queued</source>
        <translation>排队中</translation>
    </message>
    <message>
        <source>Running</source>
        <translation>运行中</translation>
    </message>
    <message>
        <source>Paused</source>
        <translation>已暂停</translation>
    </message>
    <message>
        <source>Done</source>
        <translation>已完成</translation>
    </message>
    <message>
        <source>Failed</source>
        <translation>失败</translation>
    </message>
    <message>
        <source>Cancelled</source>
        <translation>已取消</translation>
    </message>
    <message>
        <source>Skipped</source>
        <translation>已跳过</translation>
    </message>
    <message>
        <source>Interrupted</source>
        <translation>已中断</translation>
    </message>
</context>
<context>
    <name>Status</name>
    <message>
        <source>done</source>
        <extracomment>A message id: lowercase words joined by dots and underscores. Limits a frame&apos;s ``status`` is held to (see :mod:`python_endpoints.protocol`). Every message a job may say, id → its English template (``{name}``: an argument).</extracomment>
        <translation>完成</translation>
    </message>
    <message>
        <source> {percent} %</source>
        <translation> {percent} %</translation>
    </message>
    <message>
        <source> ({speed}x)</source>
        <translation> ({speed}x)</translation>
    </message>
    <message>
        <source>writing {name}</source>
        <translation>正在写入 {name}</translation>
    </message>
    <message>
        <source>reading the transcript</source>
        <translation>正在读取转录稿</translation>
    </message>
    <message>
        <source>waiting: another task is writing {names}</source>
        <translation>等待中：另一个任务正在写入 {names}</translation>
    </message>
    <message>
        <source>done: {name} was made meanwhile by another task, from the same input</source>
        <translation>完成：另一个任务已用同一输入生成了 {name}</translation>
    </message>
    <message>
        <source>probed</source>
        <translation>已探测</translation>
    </message>
    <message>
        <source>skipped: </source>
        <translation>已跳过：</translation>
    </message>
    <message>
        <source>{name} has no video stream</source>
        <translation>{name} 没有视频流</translation>
    </message>
    <message>
        <source>{name} has no audio stream</source>
        <translation>{name} 没有音频流</translation>
    </message>
    <message>
        <source>{name} has no audio stream with sound (stream {stream} declares audio but carries none)</source>
        <translation>{name} 没有带声音的音频流（流 {stream} 声明为音频但不含声音）</translation>
    </message>
    <message>
        <source>looking for a hardware encoder</source>
        <translation>正在寻找硬件编码器</translation>
    </message>
    <message>
        <source> (hardware encoder failed, using the CPU)</source>
        <translation>（硬件编码器失败，改用 CPU）</translation>
    </message>
    <message>
        <source>transcoding</source>
        <translation>转码中</translation>
    </message>
    <message>
        <source>remuxing</source>
        <translation>重新封装中</translation>
    </message>
    <message>
        <source>measuring loudness</source>
        <translation>正在测量响度</translation>
    </message>
    <message>
        <source>extracting audio</source>
        <translation>正在提取音频</translation>
    </message>
    <message>
        <source>extracting subtitles</source>
        <translation>正在提取字幕</translation>
    </message>
    <message>
        <source>extracting captions</source>
        <translation>正在提取隐藏字幕</translation>
    </message>
    <message>
        <source>encoding the audio</source>
        <translation>正在编码音频</translation>
    </message>
    <message>
        <source>joining</source>
        <translation>正在拼接</translation>
    </message>
    <message>
        <source>laying out the sheet</source>
        <translation>正在排版缩略图</translation>
    </message>
    <message>
        <source>picking frames</source>
        <translation>正在截取画面</translation>
    </message>
    <message>
        <source>finding who speaks</source>
        <translation>正在识别说话人</translation>
    </message>
    <message>
        <source>picking frames (part {part} of {parts})</source>
        <translation>正在截取画面（第 {part} 部分，共 {parts} 部分）</translation>
    </message>
    <message>
        <source>decoding the whole video</source>
        <translation>正在解码整个视频</translation>
    </message>
    <message>
        <source>no text subtitles</source>
        <translation>没有文本字幕</translation>
    </message>
    <message>
        <source>transcoding: {done} of {total} segments done</source>
        <translation>转码中：已完成 {done} / {total} 段</translation>
    </message>
    <message>
        <source>audio encoded</source>
        <translation>音频已编码</translation>
    </message>
    <message>
        <source>seeking found {picked} of the {frames} frames: </source>
        <translation>跳转只找到 {frames} 帧中的 {picked} 帧：</translation>
    </message>
    <message>
        <source>reading the audio</source>
        <translation>正在读取音频</translation>
    </message>
    <message>
        <source>loading the model {model}</source>
        <translation>正在加载模型 {model}</translation>
    </message>
    <message>
        <source>loading the model {model} again</source>
        <translation>正在重新加载模型 {model}</translation>
    </message>
    <message>
        <source>checking the transcript</source>
        <translation>正在检查转录稿</translation>
    </message>
    <message>
        <source>transcribing {position} of {duration}</source>
        <translation>正在转录 {position} / {duration}</translation>
    </message>
    <message>
        <source>{seconds} s of speech from {start} could not be made out</source>
        <translation>从 {start} 起有 {seconds} 秒语音无法识别</translation>
    </message>
    <message>
        <source>paused; the model {model} is unloaded</source>
        <translation>已暂停；模型 {model} 已卸载</translation>
    </message>
    <message>
        <source>GPU out of memory: waiting to be resumed</source>
        <translation>GPU 内存不足：等待恢复</translation>
    </message>
    <message>
        <source>out of memory: loading the model as {compute_type} on {device}</source>
        <translation>内存不足：以 {compute_type} 在 {device} 上加载模型</translation>
    </message>
    <message>
        <source>finding key phrases</source>
        <translation>正在查找关键词</translation>
    </message>
    <message>
        <source>asking {model} for a summary and chapters</source>
        <translation>正在请 {model} 生成摘要和章节</translation>
    </message>
    <message>
        <source>waiting for {model} ({seconds} s)</source>
        <translation>正在等待 {model}（{seconds} 秒）</translation>
    </message>
    <message>
        <source>reading the subtitles</source>
        <translation>正在读取字幕</translation>
    </message>
    <message>
        <source>listing names and terms with {model} (part {part} of {parts})</source>
        <translation>正在用 {model} 整理人名和术语（第 {part} 部分，共 {parts} 部分）</translation>
    </message>
    <message>
        <source>translating cues {first}-{last} of {cues} with {model}</source>
        <translation>正在用 {model} 翻译第 {first}-{last} 条字幕（共 {cues} 条）</translation>
    </message>
    <message>
        <source>connecting to {host}</source>
        <translation>正在连接 {host}</translation>
    </message>
    <message>
        <source>downloading {done}</source>
        <translation>正在下载 {done}</translation>
    </message>
    <message>
        <source>downloading model {model}: {done}</source>
        <translation>正在下载模型 {model}：{done}</translation>
    </message>
    <message>
        <source>downloading {stream} {number} of {count}: {done}</source>
        <translation>正在下载 {stream}（{number} / {count}）：{done}</translation>
    </message>
    <message>
        <source> of {total}</source>
        <translation> / {total}</translation>
    </message>
    <message>
        <source> of ~{total}</source>
        <translation> / 约 {total}</translation>
    </message>
    <message>
        <source>, {rate}/s</source>
        <translation>，{rate}/s</translation>
    </message>
    <message>
        <source>, {left} left</source>
        <translation>，剩余 {left}</translation>
    </message>
    <message>
        <source>downloaded {size}</source>
        <translation>已下载 {size}</translation>
    </message>
    <message>
        <source>looking for the video at {url}</source>
        <translation>正在 {url} 查找视频</translation>
    </message>
    <message>
        <source>merging video and audio</source>
        <translation>正在合并视频和音频</translation>
    </message>
    <message>
        <source>repairing the container</source>
        <translation>正在修复容器</translation>
    </message>
    <message>
        <source>post-processing ({name})</source>
        <translation>后期处理（{name}）</translation>
    </message>
    <message>
        <source>listing model {model} at {host}</source>
        <translation>正在 {host} 列出模型 {model} 的文件</translation>
    </message>
    <message>
        <source>installing model {model}</source>
        <translation>正在安装模型 {model}</translation>
    </message>
    <message>
        <source>paused at {done} of {total} (model {model})</source>
        <translation>已暂停于 {done} / {total}（模型 {model}）</translation>
    </message>
    <message>
        <source>sleeping {seconds} s</source>
        <translation>休眠 {seconds} 秒</translation>
    </message>
    <message>
        <source>{seconds} s left</source>
        <translation>剩余 {seconds} 秒</translation>
    </message>
</context>
<context>
    <name>TaskPanel</name>
    <message>
        <source>Payload</source>
        <extracomment>The least time between two reads of the selected task&apos;s timeline. Where a file&apos;s path is kept on its item of the outputs list. Opens a folder (a test replaces it).</extracomment>
        <translation>参数</translation>
    </message>
    <message>
        <source>Result</source>
        <translation>结果</translation>
    </message>
    <message>
        <source>Error</source>
        <translation>错误</translation>
    </message>
    <message>
        <source>Timeline</source>
        <translation>时间线</translation>
    </message>
    <message>
        <source>Click a task in the graph to see its details.</source>
        <translation>点击图中的任务以查看其详情。</translation>
    </message>
    <message>
        <source>No result yet: the task has not finished.</source>
        <translation>暂无结果：任务尚未完成。</translation>
    </message>
    <message>
        <source>Files it made (double-click one to open its folder):</source>
        <translation>生成的文件（双击可打开其所在文件夹）：</translation>
    </message>
    <message>
        <source>Other values:</source>
        <translation>其他值：</translation>
    </message>
    <message>
        <source>No error: this task has not failed.</source>
        <translation>没有错误：此任务没有失败。</translation>
    </message>
    <message>
        <source>Copy the error</source>
        <translation>复制错误</translation>
    </message>
    <message>
        <source>Message:</source>
        <translation>消息：</translation>
    </message>
    <message>
        <source>Time</source>
        <translation>时间</translation>
    </message>
    <message>
        <source>Event</source>
        <translation>事件</translation>
    </message>
    <message>
        <source>Detail</source>
        <translation>详情</translation>
    </message>
    <message>
        <source>attempt %1 of %2</source>
        <translation>第 %1 次尝试，共 %2 次</translation>
    </message>
    <message>
        <source>Double-click to open the folder of %1</source>
        <translation>双击打开 %1 所在的文件夹</translation>
    </message>
    <message>
        <source>This was the last attempt&apos;s error: the task will be tried again.</source>
        <translation>这是上一次尝试的错误：任务将再次尝试。</translation>
    </message>
    <message>
        <source>This was the last attempt&apos;s error: the task is being tried again.</source>
        <translation>这是上一次尝试的错误：任务正在重新尝试。</translation>
    </message>
    <message>
        <source>claimed</source>
        <translation>已领取</translation>
    </message>
    <message>
        <source>started</source>
        <translation>已开始</translation>
    </message>
    <message>
        <source>completed</source>
        <translation>已完成</translation>
    </message>
    <message>
        <source>failed</source>
        <translation>失败</translation>
    </message>
    <message>
        <source>retry scheduled</source>
        <translation>已安排重试</translation>
    </message>
    <message>
        <source>retried</source>
        <translation>已重试</translation>
    </message>
    <message>
        <source>cancelled</source>
        <translation>已取消</translation>
    </message>
    <message>
        <source>paused</source>
        <translation>已暂停</translation>
    </message>
    <message>
        <source>resumed</source>
        <translation>已继续</translation>
    </message>
    <message>
        <source>recovered after a restart</source>
        <translation>重启后已恢复</translation>
    </message>
    <message>
        <source>interrupted (not charged)</source>
        <translation>已中断（未计入）</translation>
    </message>
</context>
<context>
    <name>TaskTableModel</name>
    <message>
        <source>Task</source>
        <translation>任务</translation>
    </message>
    <message>
        <source>Type</source>
        <translation>类型</translation>
    </message>
    <message>
        <source>State</source>
        <translation>状态</translation>
    </message>
    <message>
        <source>Progress</source>
        <translation>进度</translation>
    </message>
    <message>
        <source>Attempt</source>
        <translation>尝试次数</translation>
    </message>
    <message>
        <source>ETA</source>
        <translation>剩余时间</translation>
    </message>
    <message>
        <source>File</source>
        <translation>文件</translation>
    </message>
    <message>
        <source>resumed</source>
        <translation>已恢复</translation>
    </message>
    <message>
        <source>see the note</source>
        <translation>请查看备注</translation>
    </message>
    <message>
        <source>Resumed after a restart of Fredica, from where it was: not an attempt it spent.</source>
        <extracomment>Badges of a task still under way: where a restart under it is news (once it has ended, how it ended is what counts).</extracomment>
        <translation>Fredica 重启后从中断处恢复：不算作一次尝试。</translation>
    </message>
    <message>
        <source>starting</source>
        <translation>正在启动</translation>
    </message>
</context>
<context>
    <name>TemplateDialog</name>
    <message>
        <source>Start a template</source>
        <translation>启动模板</translation>
    </message>
    <message>
        <source>Start a template on “%1”:</source>
        <translation>对“%1”启动模板：</translation>
    </message>
    <message numerus="yes">
        <source>Start a template on %n material(s):</source>
        <translation>
            <numerusform>对 %n 个素材启动模板：</numerusform>
        </translation>
    </message>
    <message>
        <source>Start</source>
        <extracomment>The current template&apos;s parameter fields, by name.</extracomment>
        <translation>启动</translation>
    </message>
    <message>
        <source>Downloads a web address: it cannot run on a local file.</source>
        <translation>用于下载网址：不能在本地文件上运行。</translation>
    </message>
    <message>
        <source>Needs a media file: it cannot run on a subtitle file.</source>
        <translation>需要媒体文件：不能用于字幕文件。</translation>
    </message>
    <message>
        <source>Required</source>
        <translation>必填</translation>
    </message>
    <message>
        <source>Not done unless given</source>
        <translation>不填则不做</translation>
    </message>
    <message>
        <source>As in the settings</source>
        <translation>按设置</translation>
    </message>
    <message>
        <source>The job&apos;s default</source>
        <translation>任务的默认值</translation>
    </message>
</context>
<context>
    <name>Templates</name>
    <message>
        <source>Make an MP4</source>
        <extracomment>The workflows&apos; names as a person reads them, by template (an unknown one: its own name).</extracomment>
        <translation>生成 MP4</translation>
    </message>
    <message>
        <source>Download, then make an MP4</source>
        <translation>下载后生成 MP4</translation>
    </message>
    <message>
        <source>Extract the audio</source>
        <translation>提取音频</translation>
    </message>
    <message>
        <source>Extract the subtitles</source>
        <translation>提取字幕</translation>
    </message>
    <message>
        <source>Contact sheet</source>
        <translation>缩略图总览</translation>
    </message>
    <message>
        <source>MP4, audio and subtitles</source>
        <translation>MP4、音频和字幕</translation>
    </message>
    <message>
        <source>Subtitles from speech</source>
        <translation>语音生成字幕</translation>
    </message>
    <message>
        <source>Everything</source>
        <translation>全部处理</translation>
    </message>
    <message>
        <source>Diagnostic</source>
        <translation>诊断</translation>
    </message>
    <message>
        <source>Chain of no-ops</source>
        <translation>空操作链</translation>
    </message>
    <message>
        <source>Tasks</source>
        <translation>任务</translation>
    </message>
</context>
<context>
    <name>Toast</name>
    <message>
        <source>Close</source>
        <extracomment>How long a toast stays (milliseconds), unless the pointer rests on it. Toasts shown at once at most. Between the toasts and the window&apos;s edges, and between two toasts. Card, border, text, link: light, then dark. The &quot;Show&quot; link was clicked. It has closed (by itself, its close button, or its link).</extracomment>
        <translation>关闭</translation>
    </message>
</context>
<context>
    <name>Tray</name>
    <message>
        <source>Show Fredica</source>
        <extracomment>The tooltip is written again at most this often (milliseconds) while work goes on. Show the window (a click on the icon, &quot;Show Fredica&quot;). Hide the window (&quot;Hide Fredica&quot;). &quot;Quit Fredica&quot;.</extracomment>
        <translation>显示 Fredica</translation>
    </message>
    <message>
        <source>Pause queue</source>
        <translation>暂停队列</translation>
    </message>
    <message>
        <source>Start no new task; the running ones finish</source>
        <translation>不再启动新任务；正在运行的任务会继续完成</translation>
    </message>
    <message>
        <source>Resume queue</source>
        <translation>继续队列</translation>
    </message>
    <message>
        <source>Quit Fredica</source>
        <extracomment>Submenus (``add_submenu``) go above this separator, between the queue and Quit.</extracomment>
        <translation>退出 Fredica</translation>
    </message>
    <message>
        <source>Queue paused: no new task starts</source>
        <translation>队列已暂停：不会启动新任务</translation>
    </message>
    <message>
        <source>Nothing to do</source>
        <translation>没有待处理的任务</translation>
    </message>
    <message numerus="yes">
        <source>%n running</source>
        <translation>
            <numerusform>%n 个运行中</numerusform>
        </translation>
    </message>
    <message numerus="yes">
        <source>%n queued</source>
        <translation>
            <numerusform>%n 个排队中</numerusform>
        </translation>
    </message>
    <message numerus="yes">
        <source>%n paused</source>
        <translation>
            <numerusform>%n 个已暂停</numerusform>
        </translation>
    </message>
    <message>
        <source>%1 % done</source>
        <translation>已完成 %1%</translation>
    </message>
    <message>
        <source>about %1 left</source>
        <translation>剩余约 %1</translation>
    </message>
    <message>
        <source>Hide Fredica</source>
        <translation>隐藏 Fredica</translation>
    </message>
</context>
<context>
    <name>UrlDialog</name>
    <message>
        <source>Add web addresses</source>
        <translation>添加网址</translation>
    </message>
    <message>
        <source>Web addresses (http or https) to add, one per line:</source>
        <translation>要添加的网址（http 或 https），每行一个：</translation>
    </message>
    <message>
        <source>Add</source>
        <translation>添加</translation>
    </message>
</context>
<context>
    <name>WhenDoneController</name>
    <message>
        <source>Do nothing</source>
        <extracomment>The choice changed (a :class:`WhenDone` value). Quit Fredica: the queue is done and &quot;Quit Fredica&quot; was chosen. Sleep or shut down failed: what happened and what to try (also notified). A sleep or shut-down command ran (the action&apos;s value). From the thread that ran the command: &quot;&quot; when it worked, else the error. The countdown showing, if any.</extracomment>
        <translation>不执行任何操作</translation>
    </message>
    <message>
        <source>Notify me</source>
        <translation>通知我</translation>
    </message>
    <message>
        <source>Quit Fredica</source>
        <translation>退出 Fredica</translation>
    </message>
    <message>
        <source>Sleep</source>
        <translation>睡眠</translation>
    </message>
    <message>
        <source>Shut down</source>
        <translation>关机</translation>
    </message>
    <message>
        <source>The queue is done</source>
        <translation>队列已完成</translation>
    </message>
    <message>
        <source>Every task has finished.</source>
        <translation>所有任务均已结束。</translation>
    </message>
    <message>
        <source>Fredica</source>
        <translation>Fredica</translation>
    </message>
</context>
<context>
    <name>WhenDoneMenu</name>
    <message>
        <source>When done</source>
        <translation>完成后</translation>
    </message>
</context>
</TS>
